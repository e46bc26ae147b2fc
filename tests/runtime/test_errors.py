"""Failures: model errors end the run (never raise), config errors raise at once, aborts finish."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.runtime import (AbortController, Agent, AgentConfigError, MastraError, ModelError, SignalError,
                            StructuredOutputError, ToolApprovalError)
from agents.runtime.testing import ScriptedModel, hang_step, text_step, tool_step

ROOT = Path(__file__).resolve().parents[2]


def agent_for(model, **kwargs):
    return Agent(id="a", instructions="x", model=model, **kwargs)


@pytest.mark.asyncio
async def test_model_error_ends_the_run_with_finish_reason_error():
    result = await agent_for(ScriptedModel([ModelError("rate limited", code="rate_limited", status=429)])).generate("hi")
    assert result.finish_reason == "error"


@pytest.mark.asyncio
async def test_model_error_is_in_result_error():
    boom = ModelError("rate limited", code="rate_limited", status=429)
    result = await agent_for(ScriptedModel([boom])).generate("hi")
    assert result.error is boom
    assert (result.error.code, result.error.status) == ("rate_limited", 429)


@pytest.mark.asyncio
async def test_model_error_emits_an_error_chunk_with_message_and_code():
    chunks = []
    result = await agent_for(ScriptedModel([ModelError("rate limited", code="rate_limited", status=429)])).generate(
        "hi", on_chunk=chunks.append)
    assert [c["type"] for c in chunks] == ["start", "step-start", "error", "finish"]
    assert chunks[2] == {"type": "error", "runId": result.run_id, "from": "AGENT",
                         "payload": {"error": {"message": "rate limited", "code": "rate_limited", "status": 429}}}
    assert chunks[3]["payload"]["stepResult"] == {"reason": "error"}


@pytest.mark.asyncio
async def test_model_error_calls_on_error():
    errors = []
    boom = ModelError("down")
    await agent_for(ScriptedModel([boom])).generate("hi", on_error=errors.append)
    assert errors == [{"error": boom}]


@pytest.mark.asyncio
async def test_model_error_in_a_later_step_keeps_the_earlier_steps():
    from agents.runtime import create_tool

    model = ScriptedModel([tool_step(("c1", "t", {}), usage=(3, 1)), ModelError("down mid-run")])
    result = await agent_for(model, tools={"t": create_tool(id="t", execute=lambda i: 1)}).generate("hi")
    assert result.finish_reason == "error"
    assert len(result.steps) == 1
    assert result.tool_results[0]["payload"]["result"] == 1
    assert result.usage == {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}


@pytest.mark.asyncio
async def test_model_error_code_defaults_to_model_error():
    chunks = []
    await agent_for(ScriptedModel([ModelError("down")])).generate("hi", on_chunk=chunks.append)
    assert [c["payload"]["error"] for c in chunks if c["type"] == "error"] == [{"message": "down", "code": "model_error"}]


@pytest.mark.asyncio
async def test_an_unexpected_exception_from_a_model_is_an_error_result():
    result = await agent_for(ScriptedModel([RuntimeError("provider bug")])).generate("hi")
    assert result.finish_reason == "error"
    assert isinstance(result.error, RuntimeError)


@pytest.mark.asyncio
async def test_a_failed_run_is_recorded_in_the_run_store(run_store):
    result = await agent_for(ScriptedModel([ModelError("down")])).generate("hi")
    record = run_store.runs[result.run_id]
    assert (record["status"], record["finish_reason"], record["error"], record["agent_id"]) == (
        "failed", "error", "down", "a")


@pytest.mark.asyncio
async def test_a_failing_on_chunk_callback_ends_the_run_with_an_error_not_an_exception():
    def on_chunk(chunk):
        if chunk["type"] == "text-delta":
            raise ValueError("callback bug")

    result = await agent_for(ScriptedModel([text_step("hi")])).generate("hi", on_chunk=on_chunk)
    assert result.finish_reason == "error"
    assert str(result.error) == "callback bug"


def test_unknown_provider_raises_at_construction():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model="acme/model-1")
    assert info.value.field == "model"
    assert "unknown model provider 'acme'" in info.value.problem


@pytest.mark.parametrize("spec", ["gpt-4o", "openai/", "/gpt-4o", "", "local/nope"])
def test_malformed_model_string_raises_at_construction(spec):
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model=spec)
    assert info.value.field == "model"


def test_model_object_without_model_id_is_rejected():
    class NoId:
        provider = "x"

        async def stream(self, request):
            yield {}

    agent = Agent(id="a", instructions="x", model=NoId())
    with pytest.raises(AgentConfigError) as info:
        asyncio.run(agent.generate("hi"))
    assert info.value.field == "model"


@pytest.mark.asyncio
async def test_a_model_that_never_answers_is_ended_by_abort():
    controller = AbortController()
    model = ScriptedModel([hang_step()])
    aborted = []
    asyncio.get_running_loop().call_later(0.02, controller.abort, "timeout")
    result = await asyncio.wait_for(
        agent_for(model).generate("hi", abort_signal=controller.signal, on_abort=aborted.append), timeout=5)
    assert result.finish_reason == "abort"
    assert result.error is None
    assert aborted == [{"reason": "timeout", "run_id": result.run_id}]


@pytest.mark.asyncio
async def test_an_aborted_stream_ends_with_abort_and_finish_chunks():
    controller = AbortController()
    output = await agent_for(ScriptedModel([hang_step()])).stream("hi", abort_signal=controller.signal)
    asyncio.get_running_loop().call_later(0.02, controller.abort)
    chunks = await asyncio.wait_for(_collect(output), timeout=5)
    assert [c["type"] for c in chunks] == ["start", "step-start", "response-metadata", "abort", "finish"]
    assert (await output.get_full_output()).finish_reason == "abort"


@pytest.mark.asyncio
async def test_an_aborted_run_is_recorded_as_aborted(run_store):
    controller = AbortController()
    asyncio.get_running_loop().call_later(0.02, controller.abort)
    result = await asyncio.wait_for(agent_for(ScriptedModel([hang_step()])).generate(
        "hi", abort_signal=controller.signal), timeout=5)
    assert run_store.runs[result.run_id]["status"] == "aborted"


@pytest.mark.asyncio
async def test_cancelling_the_caller_does_not_leave_the_run_hanging():
    model = ScriptedModel([hang_step()])
    task = asyncio.ensure_future(agent_for(model).generate("hi"))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)


def test_errors_share_a_base_class_and_have_stable_codes():
    assert [(cls.__name__, cls.code) for cls in (AgentConfigError, ModelError, ToolApprovalError, SignalError,
                                                StructuredOutputError)] == [
        ("AgentConfigError", "agent_config_error"), ("ModelError", "model_error"),
        ("ToolApprovalError", "tool_approval_error"), ("SignalError", "signal_error"),
        ("StructuredOutputError", "structured_output_error")]
    assert all(issubclass(cls, MastraError) for cls in (AgentConfigError, ModelError, ToolApprovalError, SignalError))


def test_config_error_to_dict_names_the_field():
    err = AgentConfigError("options.max_steps", "must be a positive integer")
    assert err.to_dict() == {"code": "agent_config_error", "message": "options.max_steps: must be a positive integer",
                             "details": {"field": "options.max_steps"}}


def test_the_runtime_imports_without_django_settings():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = ("import sys\n"
            "from agents.runtime import Agent, create_tool\n"
            "from agents.runtime.testing import ScriptedModel\n"
            "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules), 'django was imported'\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_a_generate_call_runs_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = ("import asyncio, sys\n"
            "from agents.runtime import Agent\n"
            "print(asyncio.run(Agent(id='a', instructions='x', model='local/echo').generate('ping')).text)\n"
            "assert 'django' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "echo: ping"


async def _collect(output):
    return [c async for c in output.full_stream]
