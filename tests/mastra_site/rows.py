"""Rows of every table, planted directly for the retention, export and erasure tests (named for
what they hold; times given are written over ``auto_now_add``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone


from agents.models import Message, Run, Thread, ThreadEvent, ThreadInput, ThreadLease, ToolApproval
from agents.observability import Score, TraceSpan
from inbox.models import NotificationRecord, WebhookDelivery, WebhookEndpoint
from ledger.models import LedgerDaily, LedgerEntry, LedgerResourceDaily

NOW = datetime(2031, 6, 1, 12, 0, tzinfo=dt_timezone.utc)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def thread(resource_id: str, thread_id: str, *, owner_run_id: str | None = None) -> Thread:
    """A thread with its lease (held by ``owner_run_id`` when given)."""
    row = Thread.objects.create(resource_id=resource_id, thread_id=thread_id, title=f"{thread_id} of {resource_id}")
    ThreadLease.objects.create(thread=row, owner_run_id=owner_run_id,
                               status=ThreadLease.Status.RUNNING if owner_run_id else ThreadLease.Status.IDLE)
    return row


def events(t: Thread, seqs, *, at: datetime, run_id: str = "") -> list[int]:
    """Events ``seqs`` of thread ``t`` written at ``at`` (the lease's ``last_seq`` follows)."""
    rows = ThreadEvent.objects.bulk_create([
        ThreadEvent(thread=t, seq=seq, run_id=run_id, chunk={"type": "text-delta", "runId": run_id, "seq": seq,
                                                             "payload": {"id": "1", "text": f"text of {t.resource_id}"}})
        for seq in seqs])
    ThreadEvent.objects.filter(pk__in=[r.pk for r in rows]).update(created_at=at)
    lease = ThreadLease.objects.get(thread=t)
    lease.last_seq = max(lease.last_seq, max(seqs))
    lease.save(update_fields=["last_seq"])
    return [r.pk for r in rows]


def run(run_id: str, *, resource_id: str, t: Thread | None, status: str = Run.Status.COMPLETED,
        finished: datetime | None = None, started: datetime | None = None) -> Run:
    return Run.objects.create(id=run_id, agent_id="bot", resource_id=resource_id, thread=t, status=status,
                              started_at=started or finished or NOW, finished_at=finished,
                              usage={"inputTokens": 3}, error="")


def span(run_id: str, *, at: datetime, span_id: str = "s1", trace_id: str | None = None) -> TraceSpan:
    return TraceSpan.objects.create(trace_id=trace_id or f"trace-{run_id}", span_id=span_id, run_id=run_id,
                                    name="agent run: 'bot'", type="agent_run", attributes={"run_id": run_id},
                                    input={"text": "hello"}, started_at=at, ended_at=at)


def score(run_id: str, *, at: datetime, resource_id: str = "", thread_id: str = "") -> Score:
    return Score.objects.create(score_id=f"score-{run_id}", run_id=run_id, resource_id=resource_id,
                                thread_id=thread_id, scorer_key="k", scorer_id="relevance", score=0.5,
                                input={"text": "hello"}, created_at=at)


def thread_input(t: Thread, input_id: str, *, status: str, at: datetime, run_id: str | None = None) -> ThreadInput:
    row = ThreadInput.objects.create(input_id=input_id, thread=t, agent_id="bot", kind=ThreadInput.Kind.DELIVER,
                                     status=status, run_id=run_id,
                                     signal={"id": input_id, "type": "user", "contents": f"from {t.resource_id}"})
    ThreadInput.objects.filter(pk=row.pk).update(created_at=at)
    return row


def message(t: Thread, message_id: str, *, at: datetime = NOW) -> Message:
    return Message.objects.create(message_id=message_id, thread=t, resource_id=t.resource_id, role="user",
                                  content={"format": 2, "parts": [{"type": "text", "text": "hello"}]},
                                  created_at=at)


def approval(run_id: str, tool_call_id: str, *, status: str = ToolApproval.Status.APPROVED,
             resource_id: str = "") -> ToolApproval:
    return ToolApproval.objects.create(run_id=run_id, agent_id="bot", tool_call_id=tool_call_id, tool_name="refund",
                                       args={"customer": resource_id or "someone"}, args_hash="h" * 64,
                                       state={"resourceId": resource_id, "messages": []}, status=status,
                                       decided_at=NOW if status != ToolApproval.Status.PENDING else None)


def notification(t: Thread, *, status: str, at: datetime, summary: str = "CI failed") -> NotificationRecord:
    return NotificationRecord.objects.create(agent_id="bot", resource_id=t.resource_id, thread=t, source="github",
                                             kind="ci-status", status=status, summary=summary,
                                             payload={"author": t.resource_id}, created_at=at, updated_at=at)


def endpoint(name: str, *, resource_id: str) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(name=name, source=WebhookEndpoint.Source.GITHUB, secret="s3cret",
                                          agent_id="bot", resource_id=resource_id)


def delivery(e: WebhookEndpoint, delivery_id: str, *, at: datetime,
             outcome: str = WebhookDelivery.Outcome.STORED) -> WebhookDelivery:
    row = WebhookDelivery.objects.create(endpoint=e, delivery_id=delivery_id, event_key=f"key-{delivery_id}",
                                         event="push", outcome=outcome)
    WebhookDelivery.objects.filter(pk=row.pk).update(received_at=at)
    return row


def ledger_entry(run_id: str, *, at: datetime, resource_id: str = "alice") -> LedgerEntry:
    """One priced model step of ``run_id`` at ``at``."""
    return LedgerEntry.objects.create(created_at=at, day=at.date(), agent_id="bot", resource_id=resource_id,
                                      run_id=run_id, channel="api", provider="openai", model="gpt-4o",
                                      input_tokens=10, output_tokens=5, cached_input_tokens=0, reasoning_tokens=0,
                                      latency_ms=20, cost="0.000075")


def ledger_day(*, at: datetime, resource_id: str = "alice") -> tuple[LedgerDaily, LedgerResourceDaily]:
    """The daily sums of one priced step at ``at`` (by agent, channel and model; by resource)."""
    sums = {"steps": 1, "priced_steps": 1, "input_tokens": 10, "output_tokens": 5, "cost": "0.000075"}
    return (LedgerDaily.objects.create(day=at.date(), agent_id="bot", channel="api", provider="openai",
                                       model="gpt-4o", **sums),
            LedgerResourceDaily.objects.create(day=at.date(), resource_id=resource_id, **sums))
