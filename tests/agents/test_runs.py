"""Run records on the database.

Documented choice (``Run._record``): every thread (memory) run is recorded, whatever its end; a run
without memory is recorded only when it did not end well (failed, aborted, suspended) or was
resumed from a suspension. A memoryless successful run leaves no row, so plain ``generate`` calls
cost no write.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from agents.memory import Memory
from agents.models import Run
from agents.runtime import AbortController, Agent, ModelError
from agents.runtime.testing import ScriptedModel, hang_step, text_step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def make_agent(model, memory=None) -> Agent:
    return Agent(id="runs-agent", instructions="Be brief.", model=model, memory=memory)


@sync_to_async
def all_runs() -> list[Run]:
    return list(Run.objects.select_related("thread").order_by("started_at"))


async def test_a_memory_run_is_recorded_as_completed():
    model = ScriptedModel([text_step("Hello.", usage=(5, 2))])
    result = await make_agent(model, Memory()).generate("hi", memory={"resource": "user-1", "thread": "t-run"})

    [run] = await all_runs()
    assert (run.id, run.agent_id, run.thread.resource_id, (run.thread and run.thread.thread_id)) == (result.run_id, "runs-agent", "user-1",
                                                                           "t-run")
    assert (run.status, run.finish_reason, run.error, run.steps) == ("completed", "stop", "", 1)
    assert run.usage == {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    assert run.finished_at is not None and run.finished_at >= run.started_at


async def test_a_failed_run_is_recorded_with_its_error():
    model = ScriptedModel([ModelError("rate limited", status=429)])
    result = await make_agent(model).generate("hi")

    assert result.finish_reason == "error"
    assert isinstance(result.error, ModelError)
    [run] = await all_runs()
    assert (run.id, run.agent_id, (run.thread and run.thread.thread_id)) == (result.run_id, "runs-agent", None)
    assert (run.status, run.finish_reason, run.error, run.steps) == ("failed", "error", "rate limited", 0)


async def test_a_failed_memory_run_is_recorded_and_keeps_the_input():
    from agents.models import Message

    model = ScriptedModel([ModelError("upstream down", status=503)])
    result = await make_agent(model, Memory()).generate("keep me", memory={"resource": "u", "thread": "t-fail"})
    [run] = await all_runs()
    assert (run.id, run.status, run.finish_reason, run.error, (run.thread and run.thread.thread_id)) == (
        result.run_id, "failed", "error", "upstream down", "t-fail")
    stored = await sync_to_async(lambda: [(m.role, m.content) for m in Message.objects.filter(thread__thread_id="t-fail")
                                          .order_by("id")])()
    # the input, then why the run failed: a reader who reloads the thread sees the reason
    assert stored == [("user", {"format": 2, "parts": [{"type": "text", "text": "keep me"}], "content": "keep me"}),
                      ("assistant", {"format": 2, "parts": [], "metadata": {
                          "runId": result.run_id, "agentId": "runs-agent",
                          "error": {"code": "model_error", "message": "upstream down"}}})]


async def test_an_aborted_run_is_recorded_as_aborted():
    model = ScriptedModel([hang_step()])
    controller = AbortController()
    started = asyncio.Event()

    def on_chunk(chunk):
        if chunk["type"] == "step-start":
            started.set()

    task = asyncio.ensure_future(make_agent(model).generate("wait forever", abort_signal=controller.signal,
                                                            on_chunk=on_chunk))
    await asyncio.wait_for(started.wait(), 5)
    controller.abort("user pressed stop")
    result = await asyncio.wait_for(task, 5)

    assert result.finish_reason == "abort"
    [run] = await all_runs()
    assert (run.id, run.status, run.finish_reason, run.error) == (result.run_id, "aborted", "abort", "")


async def test_a_run_aborted_before_it_starts_is_recorded():
    controller = AbortController()
    controller.abort("too late")
    model = ScriptedModel([])
    result = await make_agent(model, Memory()).generate("x", abort_signal=controller.signal,
                                                        memory={"resource": "u", "thread": "t-abort"})
    assert result.finish_reason == "abort" and model.calls == 0
    [run] = await all_runs()
    assert (run.id, run.status, run.finish_reason, (run.thread and run.thread.thread_id), run.steps) == (
        result.run_id, "aborted", "abort", "t-abort", 0)


async def test_a_memoryless_successful_run_leaves_no_row():
    model = ScriptedModel([text_step("fine")])
    result = await make_agent(model).generate("hi")
    assert result.finish_reason == "stop"
    assert await all_runs() == []


async def test_each_memory_run_has_its_own_row():
    model = ScriptedModel([text_step("one"), text_step("two")])
    agent = make_agent(model, Memory())
    r1 = await agent.generate("a", memory={"resource": "u", "thread": "t-two"})
    r2 = await agent.generate("b", memory={"resource": "u", "thread": "t-two"})
    runs = await all_runs()
    assert sorted(r.id for r in runs) == sorted([r1.run_id, r2.run_id])
    assert {(r.status, r.thread.thread_id) for r in runs} == {("completed", "t-two")}
