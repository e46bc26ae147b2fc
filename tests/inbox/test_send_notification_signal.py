"""``agent.send_notification_signal``: records, the delivery policy on a real thread, and the XML the
model receives (read back from the thread's stored history)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.models import Message, Run, ThreadInput
from agents.runtime import Agent
from agents.runtime.errors import AgentConfigError, NotificationError, SignalError
from agents.runtime.notifications.validation import iso_z
from agents.runtime.signal import render_signal
from inbox.models import NotificationRecord

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

CI = {"source": "github", "kind": "ci-status", "summary": "CI failed on main: 3 tests failed."}


def full_xml(record_id: str, priority: str, *, summary: str = CI["summary"], extra: str = "", count: int = 1) -> str:
    coalesced = f' coalescedCount="{count}"' if count > 1 else ""
    return (f'<notification {extra}id="{record_id}" source="github" type="ci-status" kind="ci-status" '
            f'priority="{priority}" status="delivered"{coalesced}>{summary}</notification>')


async def stored_content(signal_id: str) -> str:
    """The stored signal as the model sees it."""
    return (await Message.objects.aget(message_id=signal_id)).seen_by_model()


async def row(record_id: str) -> NotificationRecord:
    return await NotificationRecord.objects.aget(pk=record_id)


# -- the policy table: 4 priorities × idle/active, Mastra's exact decisions, records and XML ---------
# priority, active, decision (``now`` for the call's clock), what the thread did, what the model sees,
# record status, and what stays scheduled on the record (deliver_at, summary_at) afterwards
TABLE = [
    ("urgent", False, {"action": "deliver", "reason": "urgent"}, "wake", "full", "delivered", (None, None)),
    ("urgent", True, {"action": "deliver", "reason": "urgent"}, "deliver", "full", "delivered", (None, None)),
    ("high", False, {"action": "deliver", "reason": "idle-high"}, "wake", "full", "delivered", (None, None)),
    ("high", True, {"action": "summarize", "summaryAt": "now", "deliverAt": "now",
                    "reason": "active-high-summary-then-full"}, "deliver", "summary", "pending", ("now", None)),
    ("medium", False, {"action": "deliver", "reason": "idle-medium"}, "wake", "full", "delivered", (None, None)),
    ("medium", True, {"action": "summarize", "summaryAt": "now", "reason": "active-batch-summary"}, "deliver",
     "summary", "pending", (None, None)),
    # a low summary is never sent at receipt: the record waits for the dispatcher with its summaryAt
    ("low", False, {"action": "summarize", "summaryAt": "now", "reason": "idle-low-summary"}, None, None, "pending",
     (None, "now")),
    ("low", True, {"action": "summarize", "summaryAt": "now", "reason": "active-batch-summary"}, None, None,
     "pending", (None, "now")),
]


@pytest.mark.parametrize("priority, active, decision, action, seen, status, scheduled", TABLE,
                         ids=[f"{p}-{'active' if a else 'idle'}" for p, a, *_ in TABLE])
async def test_the_default_policy_table_as_mastra(make_agent, make_busy, settle, priority, active, decision, action,
                                                  seen, status, scheduled):
    agent = make_agent(delay_ms=300 if active else 0)
    busy = await make_busy(agent, "u1", "t1") if active else None
    result = await agent.send_notification_signal({**CI, "priority": priority}, resource_id="u1", thread_id="t1")
    rid = result.record["id"]
    await settle()
    stored = await row(rid)
    now = iso_z(stored.created_at)  # the call's clock
    assert result.decision.to_dict() == {k: (now if v == "now" else v) for k, v in decision.items()}
    assert result.action == action
    assert (stored.status, stored.delivery_reason, stored.lock_token) == (status, decision["reason"], "")
    assert result.record["status"] == status
    deliver_at, summary_at = scheduled
    assert (stored.deliver_at and iso_z(stored.deliver_at), stored.summary_at and iso_z(stored.summary_at)) == (
        deliver_at and now, summary_at and now)
    if seen is None:  # nothing emitted, nothing in the thread; the dispatcher picks the record up now
        assert (result.signal, result.run_id) == (None, None)
        assert stored.next_due_at == stored.summary_at
        assert await Message.objects.filter(thread__thread_id="t1", role="signal",
                                            type__startswith="notification").acount() == 0
        return
    if busy is not None:
        assert result.run_id == busy.run_id  # into the active run, never a second run
    expected = (full_xml(rid, priority) if seen == "full" else
                f'<notification-summary pending="1" priority="{priority}">github: 1</notification-summary>')
    assert render_signal(result.signal)["content"] == expected  # what was emitted
    if seen == "full":
        assert stored.delivered_signal_id == result.signal["id"] and stored.delivered_at is not None
        assert stored.next_due_at is None and stored.summary_signal_id is None
    else:
        assert stored.summary_signal_id == result.signal["id"]
        assert stored.delivered_signal_id is None
        # only a high record summarised while active is still due for its full delivery, once idle
        assert stored.deliver_when_idle == (priority == "high")
    # what the model received, read back from the thread's history
    assert await stored_content(result.signal["id"]) == expected


async def test_the_echo_of_a_full_notification_carries_mastras_metadata(make_agent, settle):
    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id="u1", thread_id="t1")
    result = await agent.send_notification_signal({**CI, "attributes": {"branch": "main"}, "metadata": {"pr": 7}},
                                                  resource_id="u1", thread_id="t1")
    await settle()
    chunks = []
    chunks.extend(sub.take_buffered())
    sub.unsubscribe()
    rid = result.record["id"]
    assert [c["type"] for c in chunks][:3] == ["start", "data-signal", "step-start"]  # the wake's echo
    assert [c["type"] for c in chunks].count("data-signal") == 1 and chunks[-1]["type"] == "finish"
    echo = chunks[1]["data"]
    assert echo["attributes"] == {"branch": "main", "id": rid, "source": "github", "type": "ci-status",
                                  "kind": "ci-status", "priority": "medium", "status": "delivered"}
    assert echo["metadata"] == {"pr": 7, "notification": {
        "signal": "notification", "recordId": rid, "source": "github", "kind": "ci-status", "priority": "medium",
        "status": "delivered"}}
    assert (echo["tagName"], echo["contents"], chunks[1]["transient"]) == ("notification", CI["summary"], True)


async def test_the_echo_of_a_summary_carries_mastras_metadata(make_agent, make_busy, settle):
    agent = make_agent(delay_ms=400)
    await make_busy(agent, "u1", "t1")
    sub = await agent.subscribe_to_thread(resource_id="u1", thread_id="t1")
    result = await agent.send_notification_signal(CI, resource_id="u1", thread_id="t1")
    await settle()
    chunks = []
    chunks.extend(sub.take_buffered())
    sub.unsubscribe()
    rid = result.record["id"]
    echo = next(c["data"] for c in chunks if c["type"] == "data-signal")
    assert (echo["tagName"], echo["contents"], echo["attributes"]) == (
        "notification-summary", "github: 1", {"pending": 1, "priority": "medium"})
    assert echo["metadata"] == {
        "notification": {"signal": "summary", "pending": 1, "groups": [{"source": "github", "count": 1}],
                         "byPriority": {"medium": 1}, "notificationIds": [rid], "priority": "medium"},
        "notificationSummary": {"threadId": "t1", "resourceId": "u1", "agentId": "support", "pending": 1,
                                "bySource": {"github": 1}, "byPriority": {"medium": 1}, "notificationIds": [rid]},
        "notificationIds": [rid]}


async def test_a_low_notification_sends_nothing_until_the_dispatcher_runs(make_agent, settle):
    from inbox.dispatcher import dispatch_due_notifications

    agent = make_agent()
    sub = await agent.subscribe_to_thread(resource_id="u1", thread_id="t1")
    result = await agent.send_notification_signal({**CI, "priority": "low"}, resource_id="u1", thread_id="t1")
    assert (result.signal, result.action, result.output) == (None, None, None)
    stored = await row(result.record["id"])
    assert stored.summary_at is not None and stored.next_due_at == stored.summary_at
    await settle()
    assert sub.take_buffered() == []  # nothing emitted at receipt
    stats = await dispatch_due_notifications(now=stored.summary_at, agent_lookup=lambda agent_id: agent)
    await settle()
    assert stats["counts"]["summarised"] == 1
    chunks = []
    chunks.extend(sub.take_buffered())
    sub.unsubscribe()
    # a summary of low records persists without waking: Mastra's synthetic run
    assert [c["type"] for c in chunks] == ["start", "data-signal", "finish"]
    assert chunks[1]["data"]["attributes"] == {"pending": 1, "priority": "low"}
    after = await row(stored.id)
    assert (after.status, after.summary_at, after.summary_signal_id) == ("pending", None, chunks[1]["data"]["id"])
    assert await stored_content(after.summary_signal_id) == (
        '<notification-summary pending="1" priority="low">github: 1</notification-summary>')
    assert await ThreadInput.objects.filter(thread__thread_id="t1").acount() == 0


# -- custom policies ---------------------------------------------------------------------------
async def test_a_custom_policy_decides_at_each_level(make_agent, settle):
    agent = make_agent(policy={
        "decide": lambda ctx: {"action": "discard", "reason": "muted"} if ctx["record"]["kind"] == "noise" else None,
        "sources": {"slack": "persist"},
        "priorities": {"urgent": "summarize"},
        "default": {"action": "summarize", "summaryAt": timedelta(minutes=30)},
    })
    target = {"resource_id": "u1", "thread_id": "t1"}
    muted = await agent.send_notification_signal({**CI, "kind": "noise"}, **target)
    kept = await agent.send_notification_signal({**CI, "source": "slack", "kind": "mention"}, **target)
    summarised = await agent.send_notification_signal({**CI, "priority": "urgent"}, **target)
    digest = await agent.send_notification_signal({**CI, "kind": "review"}, **target)
    await settle()
    assert [r.decision.level for r in (muted, kept, summarised, digest)] == ["decide", "source", "priority", "default"]
    assert (muted.record["status"], muted.signal) == ("discarded", None)
    assert (await row(muted.record["id"])).discarded_at is not None
    assert (kept.record["status"], kept.signal, kept.record["next_due_at"]) == ("pending", None, None)
    # Mastra sends a summary at receipt only for medium (and high with a deliverAt) records: an urgent
    # one is recorded with its summaryAt for the dispatcher
    assert (summarised.signal, summarised.record["summary_at"]) == (None, summarised.record["created_at"])
    assert summarised.decision.to_dict() == {"action": "summarize"}
    assert digest.signal is None and digest.record["summary_at"] == digest.record["next_due_at"]
    assert digest.record["summary_at"] - digest.record["created_at"] == timedelta(minutes=30)


async def test_a_failing_decide_falls_back_to_the_default_and_the_record_is_kept(make_agent, settle):
    agent = make_agent(policy={"decide": lambda ctx: {"action": "teleport"}})
    result = await agent.send_notification_signal({**CI, "priority": "urgent"}, resource_id="u1", thread_id="t1")
    await settle()
    assert result.decision.level == "fallback" and result.decision.action == "deliver"
    assert result.action == "wake" and result.record["status"] == "delivered"


async def test_a_deferred_notification_waits_for_the_dispatcher(make_agent):
    agent = make_agent(policy={"default": {"action": "defer", "deliver_at": "2030-01-01T09:00:00+00:00"}})
    result = await agent.send_notification_signal(CI, resource_id="u1", thread_id="t1")
    stored = await row(result.record["id"])
    assert result.signal is None and stored.status == "pending"
    assert stored.deliver_at.isoformat() == "2030-01-01T09:00:00+00:00" == stored.next_due_at.isoformat()
    assert stored.deliver_when_idle is False


async def test_decision_stream_options_reach_the_woken_run(make_agent, settle):
    agent = make_agent(policy={"default": {"action": "deliver", "stream_options": {"max_steps": 1}}})
    result = await agent.send_notification_signal(CI, resource_id="u1", thread_id="t1",
                                                  if_idle={"attributes": {"via": "inbox"}})
    output = await result.output.get_full_output()
    await settle()
    assert result.action == "wake" and len(output.steps) == 1
    assert 'via="inbox"' in await stored_content(result.signal["id"])


async def test_if_idle_persist_keeps_the_record_pending(make_agent, settle):
    agent = make_agent()
    result = await agent.send_notification_signal(CI, resource_id="u1", thread_id="t1",
                                                  if_idle={"behavior": "persist"})
    await settle()
    assert result.action == "persist"
    stored = await row(result.record["id"])
    assert (stored.status, stored.delivered_signal_id, stored.next_due_at) == ("pending", None, None)
    assert await stored_content(result.signal["id"]) == full_xml(stored.id, "medium")


# -- dedupe and coalesce -----------------------------------------------------------------------
async def test_a_duplicate_pending_notification_is_coalesced_in_place(make_agent, settle):
    agent = make_agent(policy={"default": "persist"})
    target = {"resource_id": "u1", "thread_id": "t1"}
    first = await agent.send_notification_signal(
        {**CI, "priority": "low", "dedupe_key": "ci:main", "payload": {"failed": 3}, "attributes": {"repo": "acme"},
         "metadata": {"a": 1}}, **target)
    second = await agent.send_notification_signal(
        {**CI, "priority": "high", "dedupeKey": "ci:main", "summary": "CI failed again", "payload": {"failed": 5},
         "attributes": {"branch": "main"}, "metadata": {"b": 2}}, **target)
    assert second.record["id"] == first.record["id"] and second.record["coalesced"] is True
    stored = await row(first.record["id"])
    assert (stored.coalesced_count, stored.priority, stored.priority_rank, stored.summary, stored.payload) == (
        2, "high", 3 - 1, "CI failed again", {"failed": 5})
    assert stored.attributes == {"repo": "acme", "branch": "main"} and stored.metadata == {"a": 1, "b": 2}
    assert await NotificationRecord.objects.acount() == 1


async def test_a_coalesced_notification_is_delivered_with_its_count(make_agent, settle):
    agent = make_agent(policy={"sources": {"github": "persist"}, "priorities": {"urgent": "deliver"}})
    target = {"resource_id": "u1", "thread_id": "t1"}
    await agent.send_notification_signal({**CI, "source": "github", "coalesce_key": "pr-7", "priority": "low"},
                                         **target)
    await agent.send_notification_signal({**CI, "coalesce_key": "pr-7", "priority": "low"}, **target)
    agent.notifications = {"delivery_policy": {"priorities": {"urgent": "deliver"}}}
    third = await agent.send_notification_signal({**CI, "coalesce_key": "pr-7", "priority": "urgent",
                                                  "attributes": {"pr": 7}}, **target)
    await settle()
    assert await stored_content(third.signal["id"]) == full_xml(third.record["id"], "urgent", extra='pr="7" ', count=3)


async def test_no_coalescing_across_kinds_sources_threads_or_after_delivery(make_agent, settle):
    agent = make_agent(policy={"default": "persist", "priorities": {"urgent": "deliver"}})
    target = {"resource_id": "u1", "thread_id": "t1"}
    base = {**CI, "dedupe_key": "same"}
    a = await agent.send_notification_signal(base, **target)
    b = await agent.send_notification_signal({**base, "kind": "deploy"}, **target)
    c = await agent.send_notification_signal({**base, "source": "gitlab"}, **target)
    d = await agent.send_notification_signal(base, resource_id="u1", thread_id="t2")
    delivered = await agent.send_notification_signal({**base, "priority": "urgent"}, **target)
    after = await agent.send_notification_signal(base, **target)
    await settle()
    assert delivered.record["id"] == a.record["id"] and delivered.record["status"] == "delivered"
    ids = {a.record["id"], b.record["id"], c.record["id"], d.record["id"], after.record["id"]}
    assert len(ids) == 5 and after.record["coalesced"] is False


async def test_a_list_in_gives_a_list_out_with_one_summary_for_the_batch(make_agent, make_busy, settle):
    agent = make_agent(delay_ms=500)
    await make_busy(agent, "u1", "t1")
    results = await agent.send_notification_signal([
        {**CI, "priority": "low", "source": "slack", "kind": "mention"},
        {**CI, "priority": "medium"},
        {**CI, "priority": "urgent", "kind": "incident"},
        {**CI, "priority": "medium", "source": "slack", "kind": "mention"},
        {**CI, "priority": "high", "source": "email", "kind": "mail"},
    ], resource_id="u1", thread_id="t1")
    assert isinstance(results, list) and len(results) == 5
    assert [r.decision.action for r in results] == ["summarize", "summarize", "deliver", "summarize", "summarize"]
    assert results[0].signal is None  # low: the dispatcher's
    summary_ids = {r.signal["id"] for r in results[1:] if r.decision.action == "summarize"}
    assert len(summary_ids) == 1  # one summary signal for the records the batch summarises now
    await settle()
    # it counts the records it summarises, sources sorted
    assert await stored_content(summary_ids.pop()) == (
        '<notification-summary pending="3" priority="high">email: 1, github: 1, slack: 1</notification-summary>')
    assert results[2].record["status"] == "delivered"


async def test_a_batch_coalescing_into_itself_is_decided_once(make_agent):
    agent = make_agent(policy={"default": "persist"})
    results = await agent.send_notification_signal([{**CI, "dedupe_key": "k"}, {**CI, "dedupe_key": "k"}],
                                                   resource_id="u1", thread_id="t1")
    assert results[0].record["id"] == results[1].record["id"]
    assert results[1].record["coalesced_count"] == 2 and results[1].record["coalesced"] is True
    assert await NotificationRecord.objects.acount() == 1


# -- bad input: nothing stored ---------------------------------------------------------------------
@pytest.mark.parametrize("notification, code", [
    ({**CI, "priority": "critical"}, "invalid_priority"),
    ({**CI, "source": ""}, "missing_source"),
    ({**CI, "kind": ""}, "missing_kind"),
    ({**CI, "summary": " "}, "missing_summary"),
    ({**CI, "payload": {"when": object()}}, "invalid_payload"),
    ([], "empty_batch"),
    ([CI, {**CI, "priority": "critical"}], "invalid_priority"),  # one bad item: none stored
    ("CI failed", "invalid_notification"),
])
async def test_bad_input_raises_a_notification_error_and_stores_nothing(make_agent, notification, code):
    agent = make_agent()
    with pytest.raises(NotificationError) as exc:
        await agent.send_notification_signal(notification, resource_id="u1", thread_id="t1")
    assert exc.value.code == code
    assert await NotificationRecord.objects.acount() == 0


async def test_bad_targets_and_options_are_refused_before_storing(make_agent):
    agent = make_agent()
    with pytest.raises(NotificationError) as exc:
        await agent.send_notification_signal(CI, resource_id="", thread_id="t1")
    assert exc.value.code == "missing_target"
    with pytest.raises(SignalError) as exc:
        await agent.send_notification_signal(CI, resource_id="u1", thread_id="t1", if_idle={"behavior": "explode"})
    assert exc.value.code == "invalid_behavior"
    bad_policy = make_agent(policy={"priorities": {"critical": "deliver"}})
    with pytest.raises(NotificationError) as exc:
        await bad_policy.send_notification_signal(CI, resource_id="u1", thread_id="t1")
    assert exc.value.code == "invalid_policy"
    no_memory = Agent(id="plain", instructions="x", model="local/echo")
    with pytest.raises(AgentConfigError):
        await no_memory.send_notification_signal(CI, resource_id="u1", thread_id="t1")
    assert await NotificationRecord.objects.acount() == 0


async def test_a_thread_run_by_another_agent_takes_the_notification_after_that_run(make_agent, make_busy, settle):
    """Mastra: another agent's running run does not block; the notification is accepted behind it
    (``deliver`` under a new run id) and runs once that run ends."""
    owner = make_agent("owner", delay_ms=100)
    notifier = make_agent("notifier")
    busy = await make_busy(owner, "u1", "t1")
    result = await notifier.send_notification_signal({**CI, "priority": "urgent"}, resource_id="u1", thread_id="t1")
    stored = await row(result.record["id"])
    assert result.action == "deliver" and result.run_id not in (None, busy.run_id)
    assert (result.record["status"], stored.status, stored.delivery_attempts) == ("delivered", "delivered", 0)
    await busy.output.get_full_output()
    await settle()
    queued = await Run.objects.aget(id=result.run_id)
    assert (queued.agent_id, queued.status) == ("notifier", "completed")
