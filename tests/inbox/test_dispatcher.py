"""``dispatch_due_notifications``: due records, planning by priority, waiting for idle threads,
failures, and recovery of a send interrupted by a crash."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Message, Thread, ThreadInput
from agents.runtime.mastra import AgentNotFound
from agents.runtime.notifications.validation import iso_z
from inbox.dispatcher import dispatch_due_notifications
from inbox.models import NotificationRecord, new_record_id

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

RANK = {"low": 0, "medium": 1, "high": 2, "urgent": 3}


async def make_record(**fields) -> NotificationRecord:
    now = fields.pop("now", None) or timezone.now()
    priority = fields.get("priority", "medium")
    defaults = {"id": new_record_id(), "agent_id": "support", "resource_id": "u1", "thread_id": "t1",
                "source": "github", "kind": "ci-status", "priority": priority, "priority_rank": RANK[priority],
                "summary": "CI failed", "created_at": now, "updated_at": now}
    defaults.update(fields)
    if "next_due_at" not in fields:
        dues = [t for t in (defaults.get("deliver_at"), defaults.get("summary_at")) if t is not None]
        defaults["next_due_at"] = min(dues) if dues else None
    thread, _ = await Thread.objects.aget_or_create(thread_id=defaults["thread_id"], resource_id=defaults["resource_id"])
    return await NotificationRecord.objects.acreate(**{**defaults, "thread_id": thread.key})


def lookup_for(*agents):
    by_id = {a.id: a for a in agents}

    def lookup(agent_id):
        if agent_id not in by_id:
            raise AgentNotFound(f"no agent with id {agent_id!r}")
        return by_id[agent_id]

    return lookup


async def row(record_id: str) -> NotificationRecord:
    return await NotificationRecord.objects.aget(pk=record_id)


def drain(sub) -> list[dict]:
    chunks = []
    chunks.extend(sub.take_buffered())
    return chunks


async def test_a_high_notification_summarised_while_active_is_delivered_in_full_once_idle(make_agent, make_busy,
                                                                                          settle):
    agent = make_agent(delay_ms=300)
    sub = await agent.subscribe_to_thread(resource_id="u1", thread_id="t1")
    busy = await make_busy(agent, "u1", "t1")
    result = await agent.send_notification_signal(
        {"source": "github", "kind": "ci-status", "priority": "high", "summary": "CI failed on main"},
        resource_id="u1", thread_id="t1")
    rid = result.record["id"]
    assert result.decision.action == "summarize" and result.action == "deliver" and result.run_id == busy.run_id

    # still busy: the dispatcher does not push the full notification into the run
    now = timezone.now()
    stats = await dispatch_due_notifications(now=now, agent_lookup=lookup_for(agent))
    assert (stats["counts"]["delivered"], stats["counts"]["waiting"]) == (0, 1)
    assert (await row(rid)).next_due_at == now + timedelta(seconds=15)

    await busy.output.get_full_output()
    await settle()
    first_run = drain(sub)
    echoes = [c["data"] for c in first_run if c["type"] == "data-signal"]
    assert [e["tagName"] for e in echoes] == ["notification-summary"]
    assert {c["runId"] for c in first_run} == {busy.run_id}

    later = now + timedelta(seconds=16)
    stats = await dispatch_due_notifications(now=later, agent_lookup=lookup_for(agent))
    assert (stats["counts"]["delivered"], stats["counts"]["waiting"]) == (1, 0)
    await settle()
    second_run = drain(sub)
    assert [c["type"] for c in second_run][:2] == ["start", "data-signal"]
    assert second_run[0]["runId"] != busy.run_id
    stored = await row(rid)
    assert (stored.status, stored.deliver_at, stored.next_due_at) == ("delivered", None, None)
    assert second_run[1]["data"]["id"] == stored.delivered_signal_id
    message = await Message.objects.aget(message_id=stored.delivered_signal_id)
    assert message.seen_by_model() == (f'<notification id="{rid}" source="github" type="ci-status" kind="ci-status" '
                               'priority="high" status="delivered">CI failed on main</notification>')
    # the model answered the full notification in the new run
    assert any(c["type"] == "text-delta" and "CI failed on main" in c["payload"]["text"] for c in second_run)
    assert await dispatch_due_notifications(now=later + timedelta(hours=1), agent_lookup=lookup_for(agent)) == {
        "delivered": [], "failed": [], "signals": [], "counts": {
            "claimed": 0, "delivered": 0, "summarised": 0, "waiting": 0, "failed": 0, "errors": 0, "recovered": 0,
            "batches": 0}}
    sub.unsubscribe()


async def test_summaries_cannot_starve_a_high_record(make_agent, settle):
    agent = make_agent()
    now = timezone.now()
    for i in range(150):  # older low digests, each in a thread of its own
        await make_record(thread_id=f"digest-{i}", priority="low", source="slack",
                          summary_at=now - timedelta(minutes=5), now=now - timedelta(minutes=10, milliseconds=-i))
    high = await make_record(thread_id="alerts", priority="high", deliver_at=now)  # the newest of all
    stats = await dispatch_due_notifications(now=now, batch_size=100, max_batches=1, agent_lookup=lookup_for(agent))
    await settle()
    assert (stats["counts"]["claimed"], stats["counts"]["delivered"], stats["counts"]["summarised"]) == (100, 1, 99)
    assert (await row(high.id)).status == "delivered"
    assert await NotificationRecord.objects.filter(summary_at__isnull=False).acount() == 51
    # a low summary does not wake a thread
    assert await ThreadInput.objects.filter(thread__thread_id__startswith="digest").acount() == 0


async def test_a_thread_is_planned_whole_with_one_summary(make_agent, settle):
    agent = make_agent()
    now = timezone.now()
    for i in range(150):
        await make_record(thread_id="digest", priority="low", source=("slack", "email")[i % 2],
                          summary_at=now - timedelta(minutes=5), now=now - timedelta(minutes=10, milliseconds=-i))
    stats = await dispatch_due_notifications(now=now, batch_size=10, max_batches=1, agent_lookup=lookup_for(agent))
    await settle()
    assert (stats["counts"]["claimed"], stats["counts"]["summarised"], stats["counts"]["batches"]) == (150, 150, 1)
    assert await NotificationRecord.objects.filter(summary_at__isnull=False).acount() == 0
    assert await Message.objects.filter(thread__thread_id="digest").acount() == 1
    message = await Message.objects.aget(thread__thread_id="digest")
    assert message.seen_by_model() == ('<notification-summary pending="150" priority="low">'
                               'email: 75, slack: 75</notification-summary>')


async def test_a_scheduled_summary_goes_out_once_due(make_agent, settle):
    agent = make_agent()
    now = timezone.now()
    records = [await make_record(source=source, priority=priority, summary_at=now + timedelta(minutes=30))
               for source, priority in (("slack", "low"), ("github", "medium"), ("email", "low"), ("github", "low"))]
    assert (await dispatch_due_notifications(now=now, agent_lookup=lookup_for(agent)))["counts"]["claimed"] == 0
    stats = await dispatch_due_notifications(now=now + timedelta(minutes=31), agent_lookup=lookup_for(agent))
    await settle()
    assert stats["counts"]["summarised"] == 4
    rows = [await row(r.id) for r in records]
    assert len({r.summary_signal_id for r in rows}) == 1
    assert all(r.summary_at is None and r.next_due_at is None and r.status == "pending" for r in rows)
    message = await Message.objects.aget(message_id=rows[0].summary_signal_id)
    assert message.seen_by_model() == ('<notification-summary pending="4" priority="medium">'
                               'email: 1, github: 2, slack: 1</notification-summary>')


async def test_five_failed_attempts_make_a_record_failed(make_agent):
    now = timezone.now()
    orphan = await make_record(agent_id="ghost", priority="urgent", deliver_at=now)
    lookup = lookup_for(make_agent())
    for attempt in range(1, 6):
        stats = await dispatch_due_notifications(now=now, agent_lookup=lookup)
        stored = await row(orphan.id)
        assert stats["counts"]["errors"] == 1 and stored.delivery_attempts == attempt
        assert stored.last_delivery_error == "AgentNotFound: no agent with id 'ghost'"
        assert stored.last_delivery_attempt_at == now and stored.lock_token == ""
        if attempt < 5:
            assert stored.status == "pending"
            assert stored.next_due_at == now + timedelta(seconds=15 * attempt)  # backs off
            assert (await dispatch_due_notifications(now=now, agent_lookup=lookup))["counts"]["claimed"] == 0
            now = stored.next_due_at
    assert (stored.status, stored.next_due_at, stats["counts"]["failed"]) == ("failed", None, 1)
    assert (await dispatch_due_notifications(now=now + timedelta(days=1), agent_lookup=lookup))["counts"]["claimed"] == 0


async def test_a_failed_send_is_counted_on_the_record(make_agent, settle):
    from agents.runtime.errors import SignalError

    agent = make_agent()

    async def refused(*args, **kwargs):
        raise SignalError("the thread refused the signal", code="refused")

    agent.send_signal = refused
    now = timezone.now()
    record = await make_record(deliver_at=now)
    stats = await dispatch_due_notifications(now=now, agent_lookup=lookup_for(agent))
    stored = await row(record.id)
    assert (stats["counts"]["errors"], stats["counts"]["delivered"]) == (1, 0)
    assert (stored.status, stored.delivery_attempts, stored.deliver_at) == ("pending", 1, now)
    assert stored.last_delivery_error.startswith("SignalError: the thread refused the signal")
    assert stored.attempt_signal_id is None


async def test_a_send_the_thread_accepted_before_a_crash_is_never_repeated(make_agent, settle):
    agent = make_agent()
    now = timezone.now()
    crashed = now - timedelta(minutes=5)
    # a dispatcher claimed this record, the thread accepted its signal, and the process died
    accepted = await make_record(deliver_at=crashed, attempt_signal_id="sig-accepted", attempt_kind="deliver",
                                 lock_token="dead", locked_until=now - timedelta(minutes=4))
    await ThreadInput.objects.acreate(input_id="sig-accepted", agent_id="support", thread_id="u1\x1ft1", kind="deliver",
                                      status="consumed",
                                      signal={"id": "sig-accepted"})
    # this one died before the thread took its signal: it is sent again
    lost = await make_record(thread_id="t2", deliver_at=crashed, attempt_signal_id="sig-lost", attempt_kind="deliver",
                             lock_token="dead", locked_until=now - timedelta(minutes=4))
    # a live claim of another dispatcher is left alone
    busy = await make_record(thread_id="t3", deliver_at=crashed, lock_token="alive",
                             locked_until=now + timedelta(seconds=30))
    stats = await dispatch_due_notifications(now=now, agent_lookup=lookup_for(agent))
    await settle()
    assert (stats["counts"]["recovered"], stats["counts"]["delivered"]) == (1, 1)
    first = await row(accepted.id)
    assert (first.status, first.delivered_signal_id, first.lock_token) == ("delivered", "sig-accepted", "")
    assert await ThreadInput.objects.filter(thread__thread_id="t1").acount() == 1
    second = await row(lost.id)
    assert second.status == "delivered" and second.delivered_signal_id not in (None, "sig-lost")
    assert (await row(busy.id)).lock_token == "alive"


async def test_a_due_delivery_for_an_active_thread_goes_into_the_run_unless_it_waits_for_idle(make_agent, make_busy,
                                                                                              settle):
    agent = make_agent(delay_ms=400)
    busy = await make_busy(agent, "u1", "t1")
    now = timezone.now()
    deferred = await make_record(priority="medium", deliver_at=now - timedelta(seconds=1))
    waits = await make_record(priority="medium", deliver_at=now - timedelta(seconds=1), deliver_when_idle=True)
    stats = await dispatch_due_notifications(now=now, agent_lookup=lookup_for(agent))
    assert (stats["counts"]["delivered"], stats["counts"]["waiting"], stats["counts"]["summarised"]) == (1, 1, 1)
    first = await row(deferred.id)
    assert first.status == "delivered"
    assert (await ThreadInput.objects.aget(input_id=first.delivered_signal_id)).run_id == busy.run_id
    second = await row(waits.id)
    assert second.status == "pending" and second.summary_signal_id is not None
    await busy.output.get_full_output()
    await settle()
    message = await Message.objects.aget(message_id=second.summary_signal_id)
    # the summary went out after the full delivery: only the waiting record is still pending
    assert message.seen_by_model() == '<notification-summary pending="1" priority="medium">github: 1</notification-summary>'


async def test_the_workers_dispatch_job_delivers_due_records_in_process(make_agent, settings, monkeypatch, settle):
    from inbox import dispatcher
    from mastra_site.workers import JOBS, Job, Workers

    agent = make_agent()
    monkeypatch.setattr(dispatcher, "_default_lookup", lookup_for(agent))
    [job] = [j for j in JOBS if j.name == "notification-dispatch"]
    settings.MASTRA_NOTIFICATION_SCHEDULER = True
    assert job.enabled()
    record = await make_record(priority="urgent", deliver_at=timezone.now())
    workers = Workers([Job(job.name, job.run, interval=lambda: 0.05, enabled=job.enabled)])
    workers.start()
    for _ in range(200):
        if (await row(record.id)).status == "delivered":
            break
        await asyncio.sleep(0.02)
    await workers.stop()
    await settle()
    assert (await row(record.id)).status == "delivered"
    settings.MASTRA_NOTIFICATION_SCHEDULER = False
    assert not job.enabled()


async def test_mastras_active_thread_scenario_then_the_dispatcher(make_agent, make_busy, settle):
    """Mastra's scenario: each priority sent while a run is active, then the dispatcher once the
    thread is idle (behaviour.out.txt 8b and 8c)."""
    agent = make_agent(delay_ms=500)
    busy = await make_busy(agent, "u1", "t1")
    base = {"source": "github", "kind": "ci-status", "attributes": {"branch": "main"}}
    sent = {}
    for priority in ("low", "medium", "high", "urgent"):
        sent[priority] = await agent.send_notification_signal(
            {**base, "priority": priority, "summary": f"CI failed on main ({priority}, active)."},
            resource_id="u1", thread_id="t1")
    assert [sent[p].action for p in ("low", "medium", "high", "urgent")] == [None, "deliver", "deliver", "deliver"]
    assert {sent[p].run_id for p in ("medium", "high", "urgent")} == {busy.run_id}
    await busy.output.get_full_output()
    await settle()
    rows = {p: await row(sent[p].record["id"]) for p in sent}
    state = {p: (r.status, r.deliver_at is not None, r.summary_at is not None, bool(r.summary_signal_id),
                 bool(r.delivered_signal_id), r.delivery_reason) for p, r in rows.items()}
    assert state == {  # Mastra's "notification records on T8-active"
        "low": ("pending", False, True, False, False, "active-batch-summary"),
        "medium": ("pending", False, False, True, False, "active-batch-summary"),
        "high": ("pending", True, False, True, False, "active-high-summary-then-full"),
        "urgent": ("delivered", False, False, False, True, "urgent"),
    }
    sub = await agent.subscribe_to_thread(resource_id="u1", thread_id="t1")
    now = timezone.now() + timedelta(seconds=1)
    stats = await dispatch_due_notifications(now=now, agent_lookup=lookup_for(agent))
    await settle()
    assert (stats["counts"]["delivered"], stats["counts"]["summarised"], stats["counts"]["failed"]) == (1, 1, 0)
    echoes = [c["data"] for c in drain(sub) if c["type"] == "data-signal"]
    sub.unsubscribe()
    high, low = rows["high"].id, rows["low"].id
    # the high record in full (its metadata carries the dispatcher's clock), then the low summary
    assert [e["tagName"] for e in echoes] == ["notification", "notification-summary"]
    assert echoes[0]["metadata"] == {"notification": {
        "signal": "notification", "recordId": high, "source": "github", "kind": "ci-status", "priority": "high",
        "status": "delivered", "deliveredAt": iso_z(now)}}
    assert (echoes[1]["attributes"], echoes[1]["contents"]) == ({"pending": 1, "priority": "low"}, "github: 1")
    assert echoes[1]["metadata"]["notification"] == {
        "signal": "summary", "pending": 1, "groups": [{"source": "github", "count": 1}], "byPriority": {"low": 1},
        "notificationIds": [low], "priority": "low"}
    after = {p: await row(sent[p].record["id"]) for p in sent}
    assert (after["high"].status, after["high"].delivered_signal_id) == ("delivered", echoes[0]["id"])
    assert (after["low"].status, after["low"].summary_signal_id, after["low"].summary_at) == (
        "pending", echoes[1]["id"], None)
    assert (after["medium"].status, after["medium"].summary_signal_id) == ("pending", rows["medium"].summary_signal_id)
    # Mastra's result: {delivered: records, failed: [{record, error}], signals: the signals sent}
    assert [(r["id"], r["priority"], r["status"], r["delivered_signal_id"], r["summary_signal_id"])
            for r in stats["delivered"]] == [
        (high, "high", "delivered", echoes[0]["id"], rows["high"].summary_signal_id),
        (low, "low", "pending", None, echoes[1]["id"])]
    assert stats["failed"] == []
    assert [(s["id"], s["type"], s["tagName"], s["contents"], s["attributes"]) for s in stats["signals"]] == [
        (echoes[0]["id"], "notification", "notification", "CI failed on main (high, active).",
         {"branch": "main", "id": high, "source": "github", "type": "ci-status", "kind": "ci-status",
          "priority": "high", "status": "delivered"}),
        (echoes[1]["id"], "notification", "notification-summary", "github: 1", {"pending": 1, "priority": "low"})]


async def test_a_failed_send_is_in_failed_with_its_error(make_agent, settle):
    from agents.runtime.errors import SignalError

    agent = make_agent()

    async def refused(*args, **kwargs):
        raise SignalError("the thread refused the signal", code="refused")

    agent.send_signal = refused
    now = timezone.now()
    record = await make_record(deliver_at=now)
    stats = await dispatch_due_notifications(now=now, agent_lookup=lookup_for(agent))
    assert (stats["delivered"], stats["signals"]) == ([], [])
    [failed] = stats["failed"]
    assert set(failed) == {"record", "error"}
    assert failed["error"] == "SignalError: the thread refused the signal"
    assert (failed["record"]["id"], failed["record"]["status"], failed["record"]["delivery_attempts"]) == (
        record.id, "pending", 1)
    assert "lock_token" not in failed["record"]
    assert stats["counts"] == {"claimed": 1, "delivered": 0, "summarised": 0, "waiting": 0, "failed": 0, "errors": 1,
                               "recovered": 0, "batches": 1}


async def test_a_thread_that_cannot_be_dispatched_fails_each_of_its_records(make_agent, settle):
    now = timezone.now()
    record = await make_record(agent_id="gone", deliver_at=now)
    stats = await dispatch_due_notifications(now=now, agent_lookup=lookup_for(make_agent()))
    [failed] = stats["failed"]
    assert (failed["record"]["id"], failed["error"]) == (record.id, "AgentNotFound: no agent with id 'gone'")
    assert "lock_token" not in failed["record"] and stats["delivered"] == [] and stats["signals"] == []
