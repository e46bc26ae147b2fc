"""Approval cards on Slack: a Block Kit card bound to (run, tool call id, args hash); the first
valid click decides it and updates the card; a second click, a stale card, a refused user or a
forged request executes nothing."""

import copy
import json

import pytest

from agent_channels.models import ChannelApproval, ChannelDecision
from agents.models import ToolApproval
from tests.agent_channels import site
from tests.agent_channels.conftest import mention, slack_click, slack_post

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

ROOT = "1700000001.000100"
ASK = 'please clean up\n/tool delete {"path": "a.txt"}'


def click(card: dict, *, user: str = "U123", action: str = "mastra_approve", value: str | None = None) -> dict:
    button = next(e for b in card["blocks"] if b["type"] == "actions" for e in b["elements"]
                  if e["action_id"] == action)
    return {"type": "block_actions", "user": {"id": user}, "team": {"id": "T1"}, "channel": {"id": "C1"},
            "container": {"type": "message", "message_ts": card["ts"], "channel_id": "C1"},
            "actions": [{"action_id": action, "block_id": "mastra_approval", "value": value or button["value"]}]}


@pytest.fixture
async def card(channel_site, slack_fake, drive) -> dict:
    await slack_post(mention(ASK, ts=ROOT))
    await drive()
    [posted] = slack_fake.posted("C1")
    return copy.deepcopy(posted)  # the card as it was posted (the fake edits its own copy)


async def test_the_card_shows_the_call_with_approve_and_deny(card):
    assert card["text"] == "Approval needed: the agent wants to run delete"
    [section, actions] = card["blocks"]
    assert section["text"]["text"] == '*Approval needed*: the agent wants to run `delete` with\n```{\n  "path": "a.txt"\n}```'
    assert [e["text"]["text"] for e in actions["elements"]] == ["Approve", "Deny"]
    approval = await ChannelApproval.objects.aget()
    assert json.loads(actions["elements"][0]["value"]) == {"approval": approval.pk, "run": approval.run_id,
                                                           "call": approval.tool_call_id, "hash": approval.args_hash}


async def test_the_first_valid_click_decides_and_a_second_changes_nothing(card, slack_fake, drive):
    status, body = await slack_click(click(card))
    assert (status, body) == (200, {"ok": True, "status": "accepted"})
    await drive()
    assert site.deleted == ["a.txt"]
    card_now, answer = slack_fake.posted("C1")
    assert card_now["text"] == "Approved by <@U123>: `delete` runs."
    assert all(b["type"] != "actions" for b in card_now["blocks"])
    assert 'tool delete returned {"deleted": "a.txt"}' in answer["text"]
    status, body = await slack_click(click(card, action="mastra_deny"))
    assert body["status"] == "already-decided"
    await drive()
    assert site.deleted == ["a.txt"]
    assert slack_fake.ephemerals == [{"channel": "C1", "user": "U123",
                                      "text": "This approval was already decided; nothing more was done."}]
    approval = await ChannelApproval.objects.aget()
    assert (approval.status, approval.decided_by, approval.decided_where) == (
        "approved", "U123", f"slack:T1:C1:{card['ts']}")
    assert [d.outcome async for d in ChannelDecision.objects.order_by("id")] == ["accepted", "already-decided"]


async def test_a_deny_never_runs_the_tool(card, slack_fake, drive):
    status, body = await slack_click(click(card, action="mastra_deny"))
    assert body["status"] == "accepted"
    await drive()
    assert site.deleted == []
    assert slack_fake.posted("C1")[0]["text"] == "Denied by <@U123>: `delete` does not run."
    assert (await ToolApproval.objects.aget()).status == "declined"


async def test_another_user_is_refused_and_nothing_runs(card, slack_fake, drive):
    status, body = await slack_click(click(card, user="U456"))
    assert body["status"] == "refused"
    await drive()
    assert site.deleted == []
    assert slack_fake.ephemerals == [{"channel": "C1", "user": "U456",
                                      "text": "You are not allowed to decide this approval."}]
    assert (await ChannelApproval.objects.aget()).status == "pending"
    assert (await ToolApproval.objects.aget()).status == "pending"


async def test_a_click_bound_to_another_call_is_stale(card, slack_fake, drive):
    approval = await ChannelApproval.objects.aget()
    forged = json.dumps({"approval": approval.pk, "run": approval.run_id, "call": approval.tool_call_id,
                         "hash": "0" * 64})
    status, body = await slack_click(click(card, value=forged))
    assert body["status"] == "stale"
    await drive()
    assert site.deleted == [] and (await ToolApproval.objects.aget()).status == "pending"


async def test_a_card_whose_run_moved_on_is_stale(card, slack_fake, drive, channel_site):
    approval = await ChannelApproval.objects.aget()
    agent = channel_site.get_agent("ops")
    thread = await approval_thread(approval)
    output = await agent.decline_tool_call(run_id=approval.run_id, tool_call_id=approval.tool_call_id,
                                           resource_id=thread.resource_id, thread_id=thread.thread_id)
    await output.get_full_output()
    status, body = await slack_click(click(card))
    assert body["status"] == "stale"
    await drive()
    assert site.deleted == []
    assert slack_fake.posted("C1")[0]["text"] == "This approval of `delete` is no longer current (the run moved on)."


async def approval_thread(approval):
    from agent_channels.models import ChannelThread

    return await ChannelThread.objects.aget(pk=approval.channel_thread_id)


async def test_a_forged_click_is_refused_before_anything(card, slack_fake):
    status, body = await slack_click(click(card), secret="forged")
    assert (status, body["code"]) == (401, "invalid_signature")
    assert await ChannelDecision.objects.acount() == 0
    assert (await ChannelApproval.objects.aget()).status == "pending"
