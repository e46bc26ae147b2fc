"""The ``notification-inbox`` tool: every action, scoping to the run's resource and thread, and
``read`` injecting the full notification into a real run."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Message, Thread
from agents.runtime.errors import NotificationError
from agents.runtime.tools import ToolContext, ToolValidationError
from inbox.dispatcher import dispatch_due_notifications
from inbox.models import NotificationRecord, new_record_id
from inbox.tool import create_notification_inbox_tool

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

RANK = {"low": 0, "medium": 1, "high": 2, "urgent": 3}


async def make_record(**fields) -> NotificationRecord:
    now = timezone.now() + timedelta(microseconds=await NotificationRecord.objects.acount())
    priority = fields.get("priority", "medium")
    defaults = {"id": new_record_id(), "agent_id": "support", "resource_id": "alice", "thread_id": "t1",
                "source": "github", "kind": "ci-status", "priority": priority, "priority_rank": RANK[priority],
                "summary": "CI failed", "created_at": now, "updated_at": now}
    fields = {**defaults, **fields}
    thread, _ = await Thread.objects.aget_or_create(thread_id=fields["thread_id"], resource_id=fields["resource_id"])
    fields["thread_id"] = thread.key
    return await NotificationRecord.objects.acreate(**fields)


def context(resource_id="alice", thread_id="t1", send_signal=None) -> ToolContext:
    return ToolContext(run_id="run-1", tool_call_id="call-1", agent_id="support", resource_id=resource_id,
                       thread_id=thread_id, send_signal=send_signal)


@pytest.fixture
def tool():
    return create_notification_inbox_tool()


async def test_the_tool_has_the_documented_id_and_input(tool):
    assert tool.id == "notification-inbox"
    schema = tool.parameters()
    assert schema["properties"]["action"]["enum"] == ["list", "read", "markSeen", "dismiss", "archive", "search"]
    assert set(schema["properties"]) == {"action", "thread_id", "id", "status", "priority", "source", "query", "limit"}
    with pytest.raises(ToolValidationError):
        await tool.run({"action": "delete"}, context())


async def test_list_shows_the_pending_inbox_of_this_thread_with_counts(tool):
    ci = await make_record(priority="high")
    mention = await make_record(source="slack", kind="mention", priority="low", summary="@alice ping")
    await make_record(status="delivered")
    await make_record(thread_id="t2")  # another thread of alice
    await make_record(resource_id="bob")  # someone else's inbox
    out = await tool.run({"action": "list"}, context())
    assert (out["count"], out["total"], out["counts"]) == (2, 2, {"delivered": 1, "pending": 2})
    assert [n["id"] for n in out["notifications"]] == [mention.id, ci.id]  # newest first
    assert out["notifications"][0] == {"id": mention.id, "source": "slack", "kind": "mention", "priority": "low",
                                       "status": "pending", "summary": "@alice ping", "coalesced_count": 1,
                                       "created_at": mention.created_at.isoformat()}
    json.dumps(out)  # the model gets JSON
    filtered = await tool.run({"action": "list", "priority": "high", "source": "github", "limit": 5}, context())
    assert [n["id"] for n in filtered["notifications"]] == [ci.id]
    delivered = await tool.run({"action": "list", "status": "delivered"}, context())
    assert delivered["count"] == 1
    other = await tool.run({"action": "list", "thread_id": "t2"}, context())
    assert other["count"] == 1 and other["notifications"][0]["status"] == "pending"
    limited = await tool.run({"action": "list", "limit": 1}, context())
    assert (limited["count"], limited["total"]) == (1, 2)


async def test_search_matches_summary_source_and_kind_across_statuses(tool):
    deploy = await make_record(kind="deploy", summary="Deploy of v2 finished", status="seen")
    await make_record(summary="CI failed")
    out = await tool.run({"action": "search", "query": "v2"}, context())
    assert [n["id"] for n in out["notifications"]] == [deploy.id]
    assert (await tool.run({"action": "search", "query": "DEPLOY"}, context()))["count"] == 1
    with pytest.raises(NotificationError) as exc:
        await tool.run({"action": "search"}, context())
    assert exc.value.code == "missing_query"


async def test_search_folds_case_in_every_alphabet(tool):
    failed = await make_record(summary="Le déploiement a ÉCHOUÉ")
    cyrillic = await make_record(summary="Ошибка сборки")
    for query, found in (("DÉPLOIEMENT", [failed.id]), ("échoué", [failed.id]), ("ошибка", [cyrillic.id]),
                         ("ÉCHEC", [])):
        out = await tool.run({"action": "search", "query": query}, context())
        assert [n["id"] for n in out["notifications"]] == found, query


@pytest.mark.parametrize("action, status, stamp", [("markSeen", "seen", "seen_at"),
                                                  ("dismiss", "dismissed", "dismissed_at"),
                                                  ("archive", "archived", "archived_at")])
async def test_filing_actions_change_the_status(tool, action, status, stamp):
    record = await make_record(deliver_at=timezone.now(), next_due_at=timezone.now())
    out = await tool.run({"action": action, "id": record.id}, context())
    assert out == {"action": action, "id": record.id, "updated": True, "status": status}
    stored = await NotificationRecord.objects.aget(pk=record.id)
    assert stored.status == status and getattr(stored, stamp) is not None and stored.next_due_at is None


async def test_dismissing_twice_changes_nothing_the_second_time(tool):
    record = await make_record()
    await tool.run({"action": "dismiss", "id": record.id}, context())
    again = await tool.run({"action": "markSeen", "id": record.id}, context())
    assert again == {"action": "markSeen", "id": record.id, "updated": False, "status": "dismissed"}


@pytest.mark.parametrize("action", ["markSeen", "dismiss", "archive"])
async def test_actions_on_one_record_need_its_id(tool, action):
    with pytest.raises(NotificationError) as exc:
        await tool.run({"action": action}, context())
    assert (exc.value.code, exc.value.details) == ("missing_id", {"field": "id"})


async def test_records_of_another_resource_are_not_found(tool):
    bobs = await make_record(resource_id="bob")
    for args in ({"action": "read", "id": bobs.id}, {"action": "dismiss", "id": bobs.id},
                 {"action": "archive", "id": "ntf_missing"}):
        with pytest.raises(NotificationError) as exc:
            await tool.run(args, context(send_signal=lambda s: None))
        assert exc.value.code == "not_found"
    assert (await NotificationRecord.objects.aget(pk=bobs.id)).status == "pending"
    with pytest.raises(NotificationError) as exc:
        await tool.run({"action": "list"}, context(resource_id=None, thread_id=None))
    assert exc.value.code == "missing_target"


async def test_read_injects_the_full_notification_and_marks_it_seen(tool):
    record = await make_record(attributes={"repo": "acme"}, coalesced_count=2, deliver_at=timezone.now(),
                               next_due_at=timezone.now(), metadata={"pr": 7})
    injected = []

    async def send_signal(signal):
        injected.append(signal)
        return signal

    out = await tool.run({"action": "read", "id": record.id}, context(send_signal=send_signal))
    assert out == {"message": "1 notification will now be delivered.", "delivered": 1, "markedSeen": 0,
                   "unavailable": 0, "alreadyRead": 0}
    # Mastra's full notification: status "delivered" in the XML, the record marked seen
    assert injected[0]["attributes"] == {"repo": "acme", "id": record.id, "source": "github", "type": "ci-status",
                                         "kind": "ci-status", "priority": "medium", "status": "delivered",
                                         "coalescedCount": 2}
    assert injected[0]["metadata"] == {"pr": 7, "notification": {
        "signal": "notification", "recordId": record.id, "source": "github", "kind": "ci-status",
        "priority": "medium", "status": "delivered", "coalescedCount": 2}}
    stored = await NotificationRecord.objects.aget(pk=record.id)
    assert (stored.status, stored.delivered_signal_id, stored.next_due_at) == ("seen", injected[0]["id"], None)
    # already seen: nothing is injected again
    again = await tool.run({"action": "read", "id": record.id}, context(send_signal=send_signal))
    assert again == {"message": "No unread notifications needed delivery.", "delivered": 0, "markedSeen": 0,
                     "unavailable": 0, "alreadyRead": 1}
    assert len(injected) == 1


async def test_read_without_an_id_delivers_every_unread_record_of_the_thread(tool):
    pending = [await make_record(summary=f"CI failed {i}") for i in range(2)]
    delivered = await make_record(status="delivered", delivered_signal_id="sig-1")
    await make_record(status="seen")  # not readable, not listed
    await make_record(thread_id="t2")  # another thread
    injected = []

    async def send_signal(signal):
        injected.append(signal)

    out = await tool.run({"action": "read"}, context(send_signal=send_signal))
    assert out == {"message": "2 notifications will now be delivered.", "delivered": 2, "markedSeen": 1,
                   "unavailable": 0, "alreadyRead": 0}
    # newest first, each a full notification with status="delivered"
    assert [s["contents"] for s in injected] == ["CI failed 1", "CI failed 0"]
    assert {s["attributes"]["status"] for s in injected} == {"delivered"}
    rows = {r.id: r async for r in NotificationRecord.objects.filter(thread__thread_id="t1")}
    assert [rows[r.id].status for r in pending] == ["seen", "seen"]
    assert sorted(rows[r.id].delivered_signal_id for r in pending) == sorted(s["id"] for s in injected)
    assert (rows[delivered.id].status, rows[delivered.id].delivered_signal_id) == ("seen", "sig-1")
    assert (await NotificationRecord.objects.aget(thread__thread_id="t2")).status == "pending"
    again = await tool.run({"action": "read"}, context(send_signal=send_signal))
    assert again == {"message": "No unread notifications needed delivery.", "delivered": 0, "markedSeen": 0,
                     "unavailable": 0, "alreadyRead": 0}


async def test_reading_a_delivered_record_just_marks_it_seen(tool):
    record = await make_record(status="delivered", delivered_signal_id="sig-1")
    injected = []
    out = await tool.run({"action": "read", "id": record.id}, context(send_signal=injected.append))
    assert out == {"message": "No unread notifications needed delivery.", "delivered": 0, "markedSeen": 1,
                   "unavailable": 0, "alreadyRead": 0}
    assert injected == []
    stored = await NotificationRecord.objects.aget(pk=record.id)
    assert (stored.status, stored.delivered_signal_id) == ("seen", "sig-1") and stored.seen_at is not None


async def test_read_outside_a_run_leaves_an_undelivered_record_unavailable(tool):
    record = await make_record()
    out = await tool.run({"action": "read", "id": record.id}, context(send_signal=None))
    assert out == {"message": "No unread notifications needed delivery.", "delivered": 0, "markedSeen": 0,
                   "unavailable": 1, "alreadyRead": 0}
    assert (await NotificationRecord.objects.aget(pk=record.id)).status == "pending"


async def test_an_agent_reads_a_summarised_record_in_its_run_and_it_is_not_delivered_again(make_agent, settle):
    agent = make_agent(tools={"notification-inbox": create_notification_inbox_tool()})
    record = await make_record(resource_id="u1", priority="high", summary="Deploy blocked",
                               deliver_at=timezone.now(), next_due_at=timezone.now(), deliver_when_idle=True)
    call = json.dumps({"action": "read", "id": record.id})
    result = await agent.generate(f"/tool notification-inbox {call}", memory={"resource": "u1", "thread": "t1"})
    assert result.error is None
    stored = await NotificationRecord.objects.aget(pk=record.id)
    assert stored.status == "seen"
    xml = (f'<notification id="{record.id}" source="github" type="ci-status" kind="ci-status" priority="high" '
           'status="delivered">Deploy blocked</notification>')
    assert f"echo: {xml}" in result.text  # the model saw the notification in the same run
    saved = await Message.objects.aget(message_id=stored.delivered_signal_id)
    assert saved.seen_by_model() == xml
    stats = await dispatch_due_notifications(now=timezone.now() + timedelta(hours=1),
                                             agent_lookup=lambda agent_id: agent)
    assert stats["counts"]["claimed"] == 0
    await settle()


async def test_an_agent_reads_all_unread_records_in_its_run(make_agent, settle):
    agent = make_agent(tools={"notification-inbox": create_notification_inbox_tool()})
    first = await make_record(resource_id="u1", summary="Deploy blocked")
    second = await make_record(resource_id="u1", source="slack", kind="mention", priority="low", summary="Ping")
    call = json.dumps({"action": "read"})
    result = await agent.generate(f"/tool notification-inbox {call}", memory={"resource": "u1", "thread": "t1"})
    assert result.error is None
    assert result.tool_results[0]["payload"]["result"] == {
        "message": "2 notifications will now be delivered.", "delivered": 2, "markedSeen": 0, "unavailable": 0,
        "alreadyRead": 0}
    for record, xml in (
            (first, f'<notification id="{first.id}" source="github" type="ci-status" kind="ci-status" '
                    'priority="medium" status="delivered">Deploy blocked</notification>'),
            (second, f'<notification id="{second.id}" source="slack" type="mention" kind="mention" '
                     'priority="low" status="delivered">Ping</notification>')):
        stored = await NotificationRecord.objects.aget(pk=record.id)
        assert stored.status == "seen"
        assert (await Message.objects.aget(message_id=stored.delivered_signal_id)).seen_by_model() == xml
        assert f"echo: {xml}" in result.text  # the model saw it in the same run
    await settle()
