"""Workflows on Celery: canvases (signature, chain, group, chord) and async callables as tools,
eagerly in process and on a real worker with Redis, where a long canvas suspends the run and the
worker resumes it with the result."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from celery import current_app
from django.conf import settings

from agents.models import Message, Run, ToolApproval
from agents.runtime import Agent, AgentConfigError
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from agents.runtime.workflows import create_workflow
from tests.agents.workflow_support import build_agent
from tests.redis_keys import forget_keys

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def eager():
    """The embedded default: no broker, canvases run in process."""
    previous = current_app.conf.task_always_eager, current_app.conf.task_eager_propagates
    current_app.conf.task_always_eager, current_app.conf.task_eager_propagates = True, True
    yield
    current_app.conf.task_always_eager, current_app.conf.task_eager_propagates = previous


def call(workflow: str, n: int) -> str:
    return f'/tool workflow-{workflow} {{"n": {n}}}'


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize("workflow, result", [("chain", 8), ("group", [4, 9]), ("chord", 13), ("count", {"counted": [0, 1, 2]})])
async def test_a_workflow_runs_eagerly_and_its_result_is_the_tool_result(eager, workflow, result):
    agent = build_agent()
    out = await agent.generate(call(workflow, 3), memory={"resource": "u1", "thread": f"t-{workflow}"})
    assert out.tool_results[0]["payload"] == {"toolCallId": out.tool_calls[0]["payload"]["toolCallId"],
                                              "toolName": f"workflow-{workflow}", "result": result}
    assert out.finish_reason == "stop"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_model_sees_each_workflow_as_a_tool_with_its_input_schema():
    model = ScriptedModel([text_step("ok")])
    agent = build_agent()
    await agent.generate("hi", model=model)
    tools = {t["name"]: t for t in model.requests[0].tools}
    assert sorted(tools) == ["workflow-chain", "workflow-chord", "workflow-count", "workflow-fail", "workflow-group",
                             "workflow-slow"]
    assert tools["workflow-chain"]["description"] == "Add one, then double."
    assert tools["workflow-chain"]["parameters"]["required"] == ["n"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_failing_canvas_is_a_tool_error_the_model_sees(eager):
    out = await build_agent().generate(call("fail", 3))
    assert out.tool_results[0]["payload"]["isError"] is True
    assert out.tool_results[0]["payload"]["result"] == {
        "error": "WorkflowFailed: workflow 'fail' failed: ValueError: cannot handle 3"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_input_that_fails_the_schema_never_starts_the_workflow(eager):
    started = []
    flow = create_workflow(id="f", execute=lambda i: started.append(i), input_schema={
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    model = ScriptedModel([tool_step(("c1", "workflow-f", {"n": "x"})), text_step("ok")])
    out = await Agent(id="a", instructions="x", model=model, workflows={"f": flow}).generate("go")
    assert started == []
    assert out.tool_results[0]["payload"]["result"] == {
        "error": "invalid arguments for tool 'workflow-f': n: 'x' is not of type 'integer'"}


def test_a_bad_workflow_is_a_config_error():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=ScriptedModel([]), workflows={"w": 3})
    assert info.value.field == "workflows.w"


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_workflows_may_come_from_the_request_context():
    model = ScriptedModel([text_step("ok"), text_step("ok")])
    flow = create_workflow(id="f", execute=lambda i: 1)
    agent = Agent(id="a", instructions="x", model=model, workflows=lambda rc: {"f": flow} if rc.get("pro") else {})
    await agent.generate("x")
    await agent.generate("x", request_context={"pro": True})
    assert [[t["name"] for t in r.tools] for r in model.requests] == [[], ["workflow-f"]]


# -- on a real worker ---------------------------------------------------------------------------

@pytest.fixture
def celery_worker_process(redis_url, db_url_for_subprocess, tmp_path):
    """A Celery worker process (solo pool) on the test database and ``redis_url``, running the
    workflow test agents; stopped after the test."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update({"DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DATABASE_URL": db_url_for_subprocess,
                "REDIS_URL": redis_url, "MASTRA": "tests.agents.workflow_support:mastra", "PYTHONUNBUFFERED": "1",
                "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)})
    log = tmp_path / "worker.log"
    import subprocess

    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "mastra_site", "worker", "--pool=solo",
                                 "--loglevel=INFO", "-I", "tests.agents.workflow_support", "-Q", "celery"],
                                cwd=str(ROOT), env=env, stdout=out, stderr=subprocess.STDOUT)
    yield proc, log
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    # kombu's queue bindings never expire: without this each run left its keys on the shared Redis
    forget_keys(redis_url, f"{settings.MASTRA_CELERY_PREFIX}:*")


def reset_connections() -> None:
    """Make this process's Celery app connect to the broker and result backend now configured
    (the app caches both)."""
    if current_app._pool is not None:
        current_app._pool.force_close_all()
        current_app._pool = None
    current_app.amqp._producer_pool = None
    current_app._local.__dict__.pop("backend", None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_long_canvas_suspends_the_run_and_the_worker_resumes_it(celery_worker_process, redis_url):
    proc, log = celery_worker_process
    previous = current_app.conf.broker_url, current_app.conf.result_backend, current_app.conf.task_always_eager
    reconfigure = (current_app.conf.broker_url, current_app.conf.result_backend) != (redis_url, redis_url)
    current_app.conf.update(broker_url=redis_url, result_backend=redis_url, task_always_eager=False)
    if reconfigure:  # this process started without the services' Redis (or with another one)
        reset_connections()
    try:
        agent = build_agent()
        first = await agent.generate(call("slow", 21), memory={"resource": "u1", "thread": "t-slow"})
        assert first.finish_reason == "suspended", (first.tool_results, first.text)
        assert first.suspend_payload["suspend_payload"]["workflowId"] == "slow"

        def done():
            return Run.objects.filter(pk=first.run_id, status="completed").exists()

        deadline = asyncio.get_running_loop().time() + 60
        while not await sync_to_async(done)():
            assert proc.poll() is None, log.read_text()[-3000:]
            assert asyncio.get_running_loop().time() < deadline, log.read_text()[-3000:]
            await asyncio.sleep(0.2)
        approval = await sync_to_async(ToolApproval.objects.get)(run_id=first.run_id)
        assert approval.status == "resumed"
        messages = await sync_to_async(lambda: list(Message.objects.filter(thread__thread_id="t-slow").order_by("id")))()
        # the result is on the assistant message that made the call (Mastra's stored format)
        calls = [p["toolInvocation"] for m in messages if m.role == "assistant" for p in m.content["parts"]
                 if p["type"] == "tool-invocation"]
        assert [(c["state"], c["result"]) for c in calls] == [("result", 42)]
        assert messages[-1].role == "assistant"
    finally:
        current_app.conf.update(broker_url=previous[0], result_backend=previous[1], task_always_eager=previous[2])
        if reconfigure:
            reset_connections()


# -- a thread run waiting on a workflow ---------------------------------------------------------

@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_thread_run_waiting_on_a_workflow_keeps_its_thread_and_resumes_with_the_result():
    from agents.models import ThreadLease
    from tests.agents.thread_harness import bounded, collect, make_agent, settle

    def long_running(input, context):
        if context.resume_data is None:
            context.suspend({"workflowId": "report", "taskId": "task-1", "status": "running"})
        return context.resume_data["result"]

    flow = create_workflow(id="report", execute=long_running, input_schema={"type": "object"})
    agent = make_agent("reporter", workflows={"report": flow})
    sub = await agent.subscribe_to_thread(resource_id="u1", thread_id="t1")
    try:
        r = await agent.send_message("/tool workflow-report {}", resource_id="u1", thread_id="t1")
        first = await bounded(r.output.get_full_output())
        assert first.finish_reason == "suspended"
        suspended = await collect(sub)
        assert [c["payload"]["suspendPayload"] for c in suspended if c["type"] == "tool-call-suspended"] == [
            {"workflowId": "report", "taskId": "task-1", "status": "running"}]
        lease = await sync_to_async(ThreadLease.objects.get)(thread__thread_id="t1")
        assert (lease.status, lease.owner_run_id) == ("suspended", r.run_id)
        waiting = await agent.send_message("any news?", resource_id="u1", thread_id="t1")
        assert (waiting.action, waiting.run_id) == ("deliver", r.run_id)
        output = await agent.resume_stream({"result": {"pages": 3}}, run_id=r.run_id)
        result = await bounded(output.get_full_output())
        assert result.text == 'echo: tool workflow-report returned {"pages": 3}\necho: any news?'
        chunks = await collect(sub)
        assert [c["payload"]["result"] for c in chunks if c["type"] == "tool-result"] == [{"pages": 3}]
        lease = await sync_to_async(ThreadLease.objects.get)(thread__thread_id="t1")
        assert lease.owner_run_id is None
    finally:
        await settle()


@pytest.mark.django_db(transaction=True)
def test_the_watcher_waits_for_the_canvas_and_the_stored_run_then_gives_up(monkeypatch, caplog):
    from agents import tasks

    outcomes = iter([None, {"result": 4}, {"result": 4}, {"result": 4}, {"result": 4}])
    resumes = iter([False, True, False, False])

    async def resume(**kwargs):
        return next(resumes)

    monkeypatch.setattr(tasks, "workflow_outcome", lambda result: next(outcomes))
    monkeypatch.setattr(tasks, "workflow_run_resume", resume)
    monkeypatch.setattr(tasks, "RESUME_ATTEMPTS", 2)

    def step(run_id, attempts=0):
        return tasks.workflow_watch_step(agent_id="planner", run_id=run_id, tool_call_id="c1", result=["id", None],
                                         resume_attempts=attempts)

    assert [step("r1"), step("r1"), step("r1", 1)] == ["running", "not-suspended", "resumed"]
    assert [step("r2"), step("r2", 1)] == ["not-suspended", "dropped"]
    assert "workflow of run r2 ended but the run is not suspended on call c1: result dropped" in caplog.text
