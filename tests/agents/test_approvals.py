"""Tool approvals on the database (invariant 5): the ToolApproval row binds the decision to the run,
the tool call and a hash of name + args; decisions survive a restart and work from another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.memory import Memory
from agents.models import Message, Run, ToolApproval
from agents.runtime import Agent, ToolApprovalError, create_tool
from agents.runtime.storage import approval_hash

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ROOT = Path(__file__).resolve().parents[2]
ARGS = {"path": "/tmp/report.txt"}
PROMPT = '/tool delete_file {"path": "/tmp/report.txt"}'


def make_agent(counter: list, *, require_approval: bool = True, memory=None) -> Agent:
    """The same definition every time (a 'restart' builds it again): local/echo calls the tool
    named on a ``/tool`` line, then answers with the tool's result."""

    def execute(input):
        counter.append(input["path"])
        return {"deleted": input["path"]}

    delete = create_tool(id="delete_file", description="Delete a file.",
                         input_schema={"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"]},
                         execute=execute, require_approval=require_approval)
    return Agent(id="files-agent", instructions="You manage files.", model="local/echo",
                 tools={"delete_file": delete}, memory=memory)


@sync_to_async
def approval_rows() -> list[ToolApproval]:
    return list(ToolApproval.objects.order_by("id"))


@sync_to_async
def approval_for(run_id: str) -> ToolApproval:
    return ToolApproval.objects.get(run_id=run_id)


@sync_to_async
def run_row(run_id: str) -> Run | None:
    return Run.objects.filter(pk=run_id).first()


async def suspend(counter: list, **options):
    agent = make_agent(counter)
    result = await agent.generate(PROMPT, **options)
    assert result.finish_reason == "suspended", result.error
    return agent, result


# -- suspension ------------------------------------------------------------------------------

async def test_suspension_stores_a_pending_approval_row_bound_to_the_call():
    counter: list = []
    _, result = await suspend(counter)
    call_id = result.suspend_payload["tool_call_id"]
    assert result.suspend_payload == {"tool_call_id": call_id, "tool_name": "delete_file", "args": ARGS}
    assert counter == []

    [row] = await approval_rows()
    assert (row.run_id, row.agent_id, row.tool_call_id, row.tool_name, row.args, row.status, row.decided_at) == (
        result.run_id, "files-agent", call_id, "delete_file", ARGS, "pending", None)
    assert row.args_hash == approval_hash("delete_file", ARGS)
    assert len(row.args_hash) == 64
    assert row.state["run_id"] == result.run_id
    assert row.state["pending_calls"][0]["payload"]["toolCallId"] == call_id

    run = await run_row(result.run_id)
    assert (run.status, run.finish_reason, run.agent_id) == ("suspended", "suspended", "files-agent")


async def test_require_tool_approval_option_suspends_a_tool_that_does_not_ask():
    counter: list = []
    agent = make_agent(counter, require_approval=False)
    result = await agent.generate(PROMPT, require_tool_approval=True)
    assert result.finish_reason == "suspended"
    assert counter == []
    assert [(r.status, r.tool_name) for r in await approval_rows()] == [("pending", "delete_file")]


async def test_pending_approvals_are_listed_from_the_database():
    from agents.store import DjangoStore

    _, result = await suspend([])
    pending = await DjangoStore().pending_approvals()
    assert pending == [{"run_id": result.run_id, "agent_id": "files-agent",
                        "tool_call_id": result.suspend_payload["tool_call_id"], "tool_name": "delete_file",
                        "args": ARGS, "hash": approval_hash("delete_file", ARGS), "status": "pending"}]
    assert await DjangoStore().pending_approvals(run_id="other-run") == []


# -- decisions -------------------------------------------------------------------------------

async def test_approve_executes_the_tool_and_marks_the_row_approved():
    counter: list = []
    agent, result = await suspend(counter)
    call_id = result.suspend_payload["tool_call_id"]

    final = await agent.approve_tool_call_generate(run_id=result.run_id, tool_call_id=call_id)

    assert counter == ["/tmp/report.txt"]
    assert final.run_id == result.run_id
    assert final.finish_reason == "stop"
    assert final.text == 'echo: tool delete_file returned {"deleted": "/tmp/report.txt"}'
    row = await approval_for(result.run_id)
    assert row.status == "approved" and row.decided_at is not None
    run = await run_row(result.run_id)
    assert (run.status, run.finish_reason, run.steps) == ("completed", "stop", 2)


async def test_approve_streaming_output():
    counter: list = []
    agent, result = await suspend(counter)
    output = await agent.approve_tool_call(run_id=result.run_id,
                                           tool_call_id=result.suspend_payload["tool_call_id"])
    chunks = [c async for c in output.full_stream]
    types = [c["type"] for c in chunks]
    assert types[0] == "start" and chunks[0]["payload"] == {"resumed": True}
    assert "tool-result" in types and types[-1] == "finish"
    assert counter == ["/tmp/report.txt"]


async def test_decline_never_runs_the_tool_and_marks_the_row_declined():
    counter: list = []
    agent, result = await suspend(counter)
    call_id = result.suspend_payload["tool_call_id"]

    final = await agent.decline_tool_call_generate(run_id=result.run_id, tool_call_id=call_id)

    assert counter == []
    assert final.finish_reason == "stop"
    assert final.text == 'echo: tool delete_file failed "Tool call was not approved by the user"'
    declined = [r["payload"] for r in final.tool_results]
    assert declined == [{"toolCallId": call_id, "toolName": "delete_file",
                         "result": "Tool call was not approved by the user", "isError": True}]
    row = await approval_for(result.run_id)
    assert row.status == "declined" and row.decided_at is not None


async def test_a_stale_tool_call_id_is_rejected_and_the_row_stays_pending():
    counter: list = []
    agent, result = await suspend(counter)

    with pytest.raises(ToolApprovalError) as info:
        await agent.approve_tool_call_generate(run_id=result.run_id, tool_call_id="not-the-pending-call")
    assert info.value.code == "approval_stale"
    with pytest.raises(ToolApprovalError) as info:
        await agent.decline_tool_call_generate(run_id=result.run_id, tool_call_id="not-the-pending-call")
    assert info.value.code == "approval_stale"

    assert counter == []
    row = await approval_for(result.run_id)
    assert (row.status, row.decided_at) == ("pending", None)
    # the right call id still works afterwards
    final = await agent.approve_tool_call_generate(run_id=result.run_id,
                                                   tool_call_id=result.suspend_payload["tool_call_id"])
    assert final.finish_reason == "stop" and counter == ["/tmp/report.txt"]


async def test_an_unknown_run_is_rejected():
    agent = make_agent([])
    with pytest.raises(ToolApprovalError) as info:
        await agent.approve_tool_call_generate(run_id="no-such-run", tool_call_id="x")
    assert info.value.code == "approval_not_found"


async def test_approving_twice_is_rejected():
    counter: list = []
    agent, result = await suspend(counter)
    call_id = result.suspend_payload["tool_call_id"]
    await agent.approve_tool_call_generate(run_id=result.run_id, tool_call_id=call_id)

    with pytest.raises(ToolApprovalError) as info:
        await agent.approve_tool_call_generate(run_id=result.run_id, tool_call_id=call_id)
    assert info.value.code == "approval_not_found"
    with pytest.raises(ToolApprovalError):
        await agent.decline_tool_call_generate(run_id=result.run_id, tool_call_id=call_id)
    assert counter == ["/tmp/report.txt"]
    assert (await approval_for(result.run_id)).status == "approved"


async def test_a_tampered_row_is_rejected_as_a_mismatch():
    counter: list = []
    agent, result = await suspend(counter)
    await sync_to_async(ToolApproval.objects.filter(run_id=result.run_id).update)(args={"path": "/etc/passwd"})

    with pytest.raises(ToolApprovalError) as info:
        await agent.approve_tool_call_generate(run_id=result.run_id,
                                               tool_call_id=result.suspend_payload["tool_call_id"])
    assert info.value.code == "approval_mismatch"
    assert counter == []
    assert (await approval_for(result.run_id)).status == "pending"


# -- restarts and other processes ------------------------------------------------------------

async def test_resume_after_a_restart_uses_only_the_database():
    counter_before: list = []
    _, result = await suspend(counter_before)
    run_id, call_id = result.run_id, result.suspend_payload["tool_call_id"]
    del result

    counter_after: list = []
    fresh = make_agent(counter_after)  # a brand-new object: nothing in memory links it to the run
    final = await fresh.approve_tool_call_generate(run_id=run_id, tool_call_id=call_id)

    assert counter_before == [] and counter_after == ["/tmp/report.txt"]
    assert final.run_id == run_id
    assert final.text == 'echo: tool delete_file returned {"deleted": "/tmp/report.txt"}'
    assert [m["role"] for m in final.messages] == ["user", "assistant", "tool", "assistant"]
    assert final.messages[0]["content"] == PROMPT
    assert (await approval_for(run_id)).status == "approved"


async def test_resume_of_a_memory_run_after_a_restart_saves_the_exchange_once():
    counter: list = []
    agent = make_agent(counter, memory=Memory())
    mem = {"resource": "user-1", "thread": "t-approve"}
    result = await agent.generate(PROMPT, memory=mem)
    assert result.finish_reason == "suspended"
    stored = await sync_to_async(lambda: [m.role for m in Message.objects.filter(thread__thread_id="t-approve")])()
    assert stored == ["user", "assistant"]

    fresh = make_agent(counter, memory=Memory())
    final = await fresh.approve_tool_call_generate(run_id=result.run_id,
                                                   tool_call_id=result.suspend_payload["tool_call_id"])
    assert final.finish_reason == "stop" and counter == ["/tmp/report.txt"]
    rows = await sync_to_async(lambda: [(m.role, m.thread.thread_id, m.resource_id)
                                        for m in Message.objects.filter(thread__thread_id="t-approve").order_by("id")])()
    # the approved call's result joined the assistant message that made the call (saved again)
    assert rows == [("user", "t-approve", "user-1"), ("assistant", "t-approve", "user-1"),
                    ("assistant", "t-approve", "user-1")]
    call = await sync_to_async(lambda: Message.objects.filter(thread__thread_id="t-approve").order_by("id")[1].content)()
    assert [p["toolInvocation"]["state"] for p in call["parts"]] == ["result"]
    assert call["parts"][0]["toolInvocation"]["result"] == {"deleted": "/tmp/report.txt"}
    run = await run_row(result.run_id)
    assert (run.status, run.finish_reason, run.thread_id) == ("completed", "stop", "user-1\x1ft-approve")



async def test_a_decision_scoped_to_another_thread_is_not_found_in_the_database():
    counter: list = []
    agent = make_agent(counter, memory=Memory())
    result = await agent.generate(PROMPT, memory={"resource": "user-1", "thread": "t-scope"})
    call_id = result.suspend_payload["tool_call_id"]
    for resource_id, thread_id in (("user-1", "t-other"), ("user-2", "t-scope")):
        for tool_call_id in (call_id, "another-call"):
            with pytest.raises(ToolApprovalError) as info:
                await agent.decline_tool_call_generate(run_id=result.run_id, tool_call_id=tool_call_id,
                                                       resource_id=resource_id, thread_id=thread_id)
            assert info.value.code == "approval_not_found"
    assert (await approval_for(result.run_id)).status == "pending"
    final = await agent.approve_tool_call_generate(run_id=result.run_id, tool_call_id=call_id,
                                                   resource_id="user-1", thread_id="t-scope")
    assert final.finish_reason == "stop" and counter == ["/tmp/report.txt"]
    assert (await approval_for(result.run_id)).status == "approved"


SUBPROCESS_APPROVE = textwrap.dedent("""
    import asyncio, json, sys
    import django
    django.setup()
    from agents.runtime import Agent, create_tool

    counter = []

    def execute(input):
        counter.append(input["path"])
        return {"deleted": input["path"]}

    delete = create_tool(id="delete_file", description="Delete a file.",
                         input_schema={"type": "object", "properties": {"path": {"type": "string"}},
                                       "required": ["path"]},
                         execute=execute, require_approval=True)
    agent = Agent(id="files-agent", instructions="You manage files.", model="local/echo",
                  tools={"delete_file": delete})
    result = asyncio.run(agent.approve_tool_call_generate(run_id=sys.argv[1], tool_call_id=sys.argv[2]))
    print(json.dumps({"text": result.text, "finish_reason": result.finish_reason, "executed": counter}))
""")


def subprocess_env(db_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MASTRA_DEFAULT_MODEL", "PYTEST_CURRENT_TEST")}
    env.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", DATABASE_URL=db_url, PYTHONPATH=str(ROOT))
    return env


async def test_another_process_approves_a_run_suspended_here(db_url_for_subprocess):
    counter: list = []
    _, result = await suspend(counter)
    call_id = result.suspend_payload["tool_call_id"]

    def approve_elsewhere():
        return subprocess.run([sys.executable, "-c", SUBPROCESS_APPROVE, result.run_id, call_id],
                              cwd=ROOT, env=subprocess_env(db_url_for_subprocess),
                              capture_output=True, text=True, timeout=60)

    proc = await sync_to_async(approve_elsewhere, thread_sensitive=False)()
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"text": 'echo: tool delete_file returned {"deleted": "/tmp/report.txt"}',
                   "finish_reason": "stop", "executed": ["/tmp/report.txt"]}
    assert counter == []  # the tool ran in the other process only
    row = await approval_for(result.run_id)
    assert row.status == "approved" and row.decided_at is not None
    run = await run_row(result.run_id)
    assert (run.status, run.finish_reason) == ("completed", "stop")

    # the decision is visible here: this process can no longer decide
    with pytest.raises(ToolApprovalError) as info:
        await make_agent(counter).approve_tool_call_generate(run_id=result.run_id, tool_call_id=call_id)
    assert info.value.code == "approval_not_found"
    assert counter == []
