"""Tool approvals over HTTP: a thread run suspended on an approval resumes through
``send-tool-approval`` (chunks on the subscription); a run without a thread through
``approve-tool-call`` (SSE) or the ``-generate`` twins (JSON). A decline never runs the tool."""

import pytest

from tests.agents.api import site
from tests.agents.api.conftest import Api, body, sse_chunks
from tests.agents.api.test_threads import ends_run, subscribe

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

DELETE = '/tool delete {"path": "/tmp/x"}'


@pytest.fixture(autouse=True)
def _deleted():
    site.deleted.clear()
    yield
    site.deleted.clear()


def suspended(chunk: dict) -> bool:
    return chunk["type"] == "finish" and chunk["payload"]["stepResult"]["reason"] == "suspended"


async def suspend_on_thread(api: Api, thread_id: str = "t1"):
    stream = await subscribe(api, thread_id)
    await api.post("/api/agents/echo/send-message", {"message": DELETE, "threadId": thread_id})
    _, chunks = await sse_chunks(stream, until=suspended)
    approval = [c for c in chunks if c["type"] == "tool-call-approval"]
    assert len(approval) == 1 and approval[0]["payload"]["toolName"] == "delete"
    return stream, approval[0]


async def test_send_tool_approval_resumes_the_thread_run(alice: Api):
    stream, approval = await suspend_on_thread(alice)
    response = await alice.post("/api/agents/echo/send-tool-approval", {
        "threadId": "t1", "toolCallId": approval["payload"]["toolCallId"], "approved": True})
    assert response.status_code == 200, response.content
    assert body(response) == {"accepted": True, "runId": approval["runId"],
                              "toolCallId": approval["payload"]["toolCallId"]}
    _, chunks = await sse_chunks(stream, until=ends_run)
    results = [c for c in chunks if c["type"] == "tool-result"]
    assert results[0]["payload"]["result"] == {"deleted": "/tmp/x"}
    assert site.deleted == ["/tmp/x"]
    again = await alice.post("/api/agents/echo/send-tool-approval", {
        "threadId": "t1", "toolCallId": approval["payload"]["toolCallId"], "approved": True})
    assert again.status_code == 404 and body(again)["code"] == "approval_not_found"


async def test_a_declined_call_never_runs(alice: Api):
    stream, approval = await suspend_on_thread(alice)
    response = await alice.post("/api/agents/echo/send-tool-approval", {
        "threadId": "t1", "toolCallId": approval["payload"]["toolCallId"], "approved": False})
    assert response.status_code == 200
    await sse_chunks(stream, until=ends_run)
    assert site.deleted == []


async def test_another_user_cannot_decide(alice: Api, bob: Api):
    _, approval = await suspend_on_thread(alice)
    call = approval["payload"]["toolCallId"]
    response = await bob.post("/api/agents/echo/send-tool-approval",
                              {"threadId": "t1", "toolCallId": call, "approved": True})
    assert response.status_code == 404 and body(response)["code"] == "approval_not_found"  # bob's t1 waits on nothing
    by_run = await bob.post("/api/agents/echo/approve-tool-call", {"runId": approval["runId"], "toolCallId": call})
    assert by_run.status_code == 404 and body(by_run)["code"] == "approval_not_found"
    await alice.post("/api/agents/echo/threads/abort", {"threadId": "t1"})
    assert site.deleted == []


async def generate_suspended(api: Api) -> dict:
    result = body(await api.post("/api/agents/echo/generate", {"messages": DELETE}))
    assert result["finishReason"] == "suspended"
    return result


async def test_approve_tool_call_streams_the_continued_run(alice: Api):
    result = await generate_suspended(alice)
    response = await alice.post("/api/agents/echo/approve-tool-call", {
        "runId": result["runId"], "toolCallId": result["suspendPayload"]["toolCallId"]})
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    raw, chunks = await sse_chunks(response)
    assert raw.endswith(b"data: [DONE]\n\n")
    assert [c for c in chunks if c["type"] == "tool-result"][0]["payload"]["result"] == {"deleted": "/tmp/x"}
    assert chunks[-1]["type"] == "finish" and site.deleted == ["/tmp/x"]


async def test_decline_tool_call_generate_answers_json_without_running_the_tool(alice: Api):
    result = await generate_suspended(alice)
    response = await alice.post("/api/agents/echo/decline-tool-call-generate", {
        "runId": result["runId"], "toolCallId": result["suspendPayload"]["toolCallId"]})
    assert response.status_code == 200
    assert body(response)["finishReason"] == "stop" and site.deleted == []
    stale = await alice.post("/api/agents/echo/approve-tool-call-generate", {
        "runId": result["runId"], "toolCallId": result["suspendPayload"]["toolCallId"]})
    assert stale.status_code == 404 and body(stale)["code"] == "approval_not_found"


async def test_approve_needs_run_and_tool_call_ids(alice: Api):
    response = await alice.post("/api/agents/echo/approve-tool-call", {"toolCallId": "x"})
    assert response.status_code == 400 and body(response)["code"] == "missing_field"


async def test_a_threadless_run_is_decided_only_by_its_owner_and_errors_name_nothing_of_it(alice: Api, bob: Api):
    result = await generate_suspended(alice)
    run_id, call = result["runId"], result["suspendPayload"]["toolCallId"]
    unknown = await bob.post("/api/agents/echo/approve-tool-call-generate", {"runId": "no-such-run", "toolCallId": call})
    for route in ("approve-tool-call", "approve-tool-call-generate", "decline-tool-call-generate"):
        for tool_call_id in (call, "another-call"):
            response = await bob.post(f"/api/agents/echo/{route}", {"runId": run_id, "toolCallId": tool_call_id})
            assert (response.status_code, body(response)["code"]) == (404, "approval_not_found")
            assert call not in response.content.decode() or tool_call_id == call
    assert body(unknown)["code"] == "approval_not_found"
    stale = await alice.post("/api/agents/echo/approve-tool-call-generate", {"runId": run_id, "toolCallId": "guess"})
    assert stale.status_code == 409 and call not in stale.content.decode()  # the pending call is not named
    assert site.deleted == []
    done = await alice.post("/api/agents/echo/approve-tool-call-generate", {"runId": run_id, "toolCallId": call})
    assert done.status_code == 200 and site.deleted == ["/tmp/x"]


async def test_a_caller_may_not_reuse_an_existing_run_id(alice: Api, bob: Api):
    result = await generate_suspended(alice)
    for api in (bob, alice):
        for route in ("generate", "stream"):
            response = await api.post(f"/api/agents/echo/{route}", {"messages": "hi", "runId": result["runId"]})
            assert (response.status_code, body(response)["code"]) == (409, "run_id_taken")
    # alice's suspended run and its approval are intact
    done = await alice.post("/api/agents/echo/approve-tool-call-generate", {
        "runId": result["runId"], "toolCallId": result["suspendPayload"]["toolCallId"]})
    assert done.status_code == 200 and site.deleted == ["/tmp/x"]
    fresh = await alice.post("/api/agents/echo/generate", {"messages": "hi", "runId": "my-own-run"})
    assert fresh.status_code == 200 and body(fresh)["runId"] == "my-own-run"
