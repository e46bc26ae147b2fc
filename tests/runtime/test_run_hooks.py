"""A thread run built with its ThreadHooks: input echoes after ``start``, delivered inputs taken at
the step boundary, one ``write_end`` at the end; without hooks a run is a plain run."""

import pytest

from agents.runtime import Agent, InMemoryMemory
from agents.runtime.run import ThreadHooks
from agents.runtime.signal import create_signal, echo_chunk, message_to_signal, render_signal
from agents.runtime.testing import ScriptedModel, text_step
from agents.runtime.stored_messages import signal_to_stored

pytestmark = pytest.mark.asyncio


def thread_agent(model):
    return Agent(id="bot", instructions="Be brief.", model=model, memory=InMemoryMemory())


def thread_hooks(take_inputs, write_end, *, echoes=(), ended=None) -> ThreadHooks:
    """Hooks as the thread runtime gives them; ``ended`` collects each finalized run's reason."""
    async def finalize(result):
        if ended is not None:
            ended.append(result.finish_reason)

    return ThreadHooks(emit=lambda chunk: None, take_inputs=take_inputs, write_end=write_end, finalize=finalize,
                       echoes=list(echoes))


async def start(agent, hooks, signals):
    """Start a thread run as the thread runtime does; returns its output."""
    output = await agent.start_thread_stream(
        [render_signal(s) for s in signals], {"memory": {"resource": "u1", "thread": "t1"}, "run_id": "run-1"},
        hooks=hooks)
    result = await output.get_full_output()
    return output, result


async def test_a_thread_run_echoes_its_inputs_takes_delivered_ones_and_writes_its_end_once():
    first = message_to_signal("hello")
    late = create_signal({"type": "notification", "contents": "build failed"})
    persisted = message_to_signal("kept for later")
    # nothing before the first model call, then two inputs after the first step, then nothing
    batches = [[], [{"signal": late, "kind": "input"}, {"signal": persisted, "kind": "echo"}], []]
    drains, settles, settled_messages = [], [], []

    async def take_inputs():
        drains.append(len(drains))
        return batches.pop(0) if batches else []

    async def write_end(messages, record):
        settles.append(([m["role"] for m in messages], record["status"], record["finish_reason"]))
        settled_messages.extend(messages)

    model = ScriptedModel([text_step("one"), text_step("two")])
    ended = []
    hooks = thread_hooks(take_inputs, write_end, echoes=[echo_chunk(first, "run-1")], ended=ended)
    output, result = await start(thread_agent(model), hooks, [first])
    assert [c["type"] for c in output.chunks] == [
        "start", "data-user-message", "step-start", "text-start", "text-delta", "text-end",
        "data-signal", "data-user-message", "step-finish",
        "step-start", "text-start", "text-delta", "text-end", "step-finish", "finish"]
    assert output.chunks[1] == echo_chunk(first, "run-1")
    assert output.chunks[6] == echo_chunk(late, "run-1") and output.chunks[7] == echo_chunk(persisted, "run-1")
    assert [c["payload"]["stepResult"] for c in output.chunks if c["type"] == "step-finish"] == [
        {"reason": "other", "isContinued": True}, {"reason": "stop", "isContinued": False}]
    # the delivered input reaches the second model call; the persisted one only the history
    second = model.requests[1].messages
    assert second[-1]["content"] == render_signal(late)["content"]
    assert all(m.get("content") != render_signal(persisted)["content"] for m in second)
    assert [s.finish_reason for s in result.steps] == ["other", "stop"]
    # drained before the first call, after step 1 (inputs taken) and after step 2 (nothing)
    assert drains == [0, 1, 2]
    # settled in Mastra's stored format: each input a ``signal`` message with its contents
    assert settles == [(["signal", "assistant", "signal", "signal", "assistant"], "completed", "stop")]
    assert settled_messages[2:4] == [signal_to_stored(late), signal_to_stored(persisted)]
    assert ended == ["stop"]


async def test_an_aborted_thread_run_still_writes_its_end():
    from agents.runtime import AbortController

    settles = []

    async def take_inputs():
        return []

    async def write_end(messages, record):
        settles.append(record["status"])

    controller = AbortController()
    controller.abort("stop")
    agent = thread_agent(ScriptedModel([text_step("never")]))
    ended = []
    output = await agent.start_thread_stream(
        [render_signal(message_to_signal("hi"))],
        {"memory": {"resource": "u1", "thread": "t1"}, "abort_signal": controller.signal},
        hooks=thread_hooks(take_inputs, write_end, ended=ended))
    await output.get_full_output()
    assert [c["type"] for c in output.chunks] == ["start", "abort", "finish"]
    assert settles == ["aborted"] and ended == ["abort"]


async def test_a_plain_run_streams_response_metadata_and_never_drains():
    agent = Agent(id="bot", instructions="Be brief.", model=ScriptedModel([text_step("hi")]))
    output = await agent.stream("hello")
    await output.get_full_output()
    assert [c["type"] for c in output.chunks] == [
        "start", "step-start", "response-metadata", "text-start", "text-delta", "text-end", "step-finish", "finish"]


async def test_thread_runtime_needs_memory():
    from agents.runtime import AgentConfigError

    agent = Agent(id="bot", instructions="Be brief.", model=ScriptedModel([]))
    with pytest.raises(AgentConfigError) as info:
        agent.thread_runtime("send_message")
    assert info.value.message == "memory: send_message needs memory=Memory() on agent 'bot'"
