"""A resource planted with rows in every table that can reference it (the export and erasure
tests): alice and bob get the same shape of data, with the same thread ids."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.backends.db import SessionStore
from rest_framework.authtoken.models import Token

from agent_channels.models import (ChannelApproval, ChannelDecision, ChannelEvent, ChannelRun, ChannelThread,
                                   OutboxMessage)
from agents.editor.models import AgentDefinition, AgentVersion
from agents.models import Run, Thread, ThreadInput, ToolApproval
from budgets.models import ActiveRunSlot, BudgetCounter
from inbox.models import NotificationRecord, WebhookRefusal
from ledger.models import LedgerDaily, LedgerEntry, LedgerResourceDaily
from mastra_site.models import ErasureRecord
from schedules.models import Schedule, ScheduleTrigger
from tests.mastra_site import rows
from tests.mastra_site.rows import NOW

#: every table that holds rows of a resource (the walk of ``mastra_site.resource_rows`` finds these;
#: a new table that references a resource belongs here, with rows in :func:`plant`)
RESOURCE_TABLES = {
    "admin.LogEntry", "agents.Message", "agents.Run", "agents.Score", "agents.Thread", "agents.ThreadEvent",
    "agents.ThreadInput", "agents.ThreadLease", "agents.ToolApproval", "agents.TraceSpan",
    "inbox.NotificationRecord", "inbox.WebhookDelivery", "inbox.WebhookEndpoint", "inbox.WebhookRefusal",
    "schedules.Schedule", "schedules.ScheduleTrigger",
    "agent_channels.ChannelThread", "agent_channels.ChannelEvent", "agent_channels.ChannelRun",
    "agent_channels.OutboxMessage", "agent_channels.ChannelApproval", "agent_channels.ChannelDecision",
    "budgets.BudgetCounter", "budgets.ActiveRunSlot",
    "ledger.LedgerEntry", "ledger.LedgerResourceDaily",
}


@dataclass
class Planted:
    resource_id: str
    user: User
    operator: User
    threads: list[Thread]
    decided_approval: ToolApproval


def plant(resource_id: str, tag: str, operator: User) -> Planted:
    """``resource_id``'s rows; ``tag`` ("a", "b") keeps the ids of rows that survive an erasure
    (run ids in approvals, agent ids) free of the resource id, as the site's random ids are."""
    user = User.objects.create_user(username=resource_id, email=f"{resource_id}@example.com",
                                    first_name=resource_id.title(), password="pw-123456")
    Token.objects.create(user=user)
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session.create()
    t1, t2 = rows.thread(resource_id, "t1"), rows.thread(resource_id, "t2")
    rows.message(t1, "m1"), rows.message(t1, "m2"), rows.message(t2, "m1")
    run1, run2, run3, run4 = (f"run-{tag}{n}" for n in range(1, 5))
    rows.run(run1, resource_id=resource_id, t=t1, finished=NOW)
    rows.run(run2, resource_id=resource_id, t=t2, status=Run.Status.SUSPENDED)
    rows.run(run3, resource_id=resource_id, t=None, status=Run.Status.FAILED, finished=NOW)  # no memory
    rows.events(t1, [1, 2, 3], at=NOW, run_id=run1)
    rows.events(t2, [1], at=NOW, run_id=run2)
    rows.thread_input(t1, "i1", status=ThreadInput.Status.CONSUMED, at=NOW, run_id=run1)
    rows.span(run1, at=NOW)
    rows.span(run3, at=NOW)
    rows.span(run4, at=NOW)  # a run without a row (memory-less, succeeded): found by its score
    rows.score(run1, at=NOW, resource_id=resource_id, thread_id="t1")
    rows.score(run4, at=NOW, resource_id=resource_id)
    decided = rows.approval(run1, "call-1", resource_id=resource_id)
    rows.approval(run2, "call-2", status=ToolApproval.Status.PENDING, resource_id=resource_id)
    rows.notification(t1, status=NotificationRecord.Status.DELIVERED, at=NOW)
    rows.notification(t2, status=NotificationRecord.Status.PENDING, at=NOW)
    endpoint = rows.endpoint(f"gh-{tag}", resource_id=resource_id)
    rows.delivery(endpoint, f"d-{tag}1", at=NOW)
    WebhookRefusal.objects.create(source="github", name=endpoint.name, endpoint=endpoint, code="invalid_signature",
                                  status=401, reason="bad", minute=NOW, first_at=NOW, last_at=NOW)
    # a schedule into the resource's thread, and one of its fires
    schedule = Schedule.objects.create(id=f"agent_digest-{tag}", agent_id=f"agent-{tag}", prompt="the digest",
                                       thread_id="t1", resource_id=resource_id, cron="0 9 * * *", next_fire_at=NOW,
                                       created_by=user, created_at=NOW, updated_at=NOW)
    ScheduleTrigger.objects.create(schedule=schedule, claim_id=f"claim-{tag}", scheduled_fire_at=NOW,
                                   actual_fire_at=NOW, outcome=ScheduleTrigger.Outcome.SUCCEEDED, run_id=run1)
    # a Slack thread mapped to the resource's thread: its event, its run, an answer in the outbox, an
    # approval card and its decision
    channel = ChannelThread.objects.create(agent_id=f"agent-{tag}", platform="slack", key=f"T1:C1:{tag}.1",
                                           resource_id=resource_id, thread_id="t1", target={"channel": "C1"})
    ChannelEvent.objects.create(agent_id=f"agent-{tag}", platform="slack", event_id=f"Ev{tag}", kind="app_mention",
                                payload={"text": "hi"}, channel_thread=channel, run_id=run1)
    ChannelRun.objects.create(run_id=run1, channel_thread=channel, requested_by="U1", text="answer")
    OutboxMessage.objects.create(agent_id=f"agent-{tag}", platform="slack", key=f"{run1}:answer", channel_thread=channel,
                                 body="answer", bucket="slack:T1", next_attempt_at=NOW)
    card = ChannelApproval.objects.create(agent_id=f"agent-{tag}", platform="slack", channel_thread=channel,
                                          run_id=run2, tool_call_id="call-2", tool_name="delete", args_hash="h")
    ChannelDecision.objects.create(approval=card, user="U1", decision="approve", outcome="accepted")
    # the resource's budget counters (its own day, and a per-run counter of one of its runs) and an
    # active-run slot
    BudgetCounter.objects.create(counter_key=f"per-user|resource|{resource_id}", period_key="2026-12-03",
                                 budget_id="per-user", scope="resource", scope_value=resource_id,
                                 resource_id=resource_id, unit="tokens", mode="hard", limit=100, spent=5, updated_at=NOW)
    BudgetCounter.objects.create(counter_key="loop-guard|site|", period_key=f"run:{run1}", budget_id="loop-guard",
                                 scope="site", run_id=run1, resource_id=resource_id, unit="tokens", mode="hard", limit=100, spent=5,
                                 updated_at=NOW)
    ActiveRunSlot.objects.create(run_id=run2, resource_id=resource_id, agent_id=f"agent-{tag}", acquired_at=NOW,
                                 expires_at=NOW)
    # the admin's log: an operator changed the thread, and the user's account
    LogEntry.objects.create(user=operator, content_type=ContentType.objects.get_for_model(Thread), object_id=t1.key,
                            object_repr=str(t1), action_flag=CHANGE, change_message="[]")
    LogEntry.objects.create(user=operator, content_type=ContentType.objects.get_for_model(User),
                            object_id=str(user.pk), object_repr=resource_id, action_flag=CHANGE, change_message="[]")
    # the user as an operator: an agent version they authored, an erasure they made
    definition = AgentDefinition.objects.create(agent_id=f"agent-{tag}", name="Agent", synced_at=NOW)
    AgentVersion.objects.create(agent=definition, number=1, author=user, author_name=resource_id, note="tone")
    ErasureRecord.objects.create(resource_hash="0" * 64, erased_at=NOW, erased_by=user, erased_by_name=resource_id,
                                 via=ErasureRecord.Via.ADMIN, account=ErasureRecord.Account.NONE, rows={})
    # the cost ledger: two steps of a thread run, one of a run without memory, and their daily sums
    for run_id, thread_id, step in ((run1, "t1", 0), (run1, "t1", 1), (run4, "", 0)):
        LedgerEntry.objects.create(created_at=NOW, day=NOW.date(), agent_id=f"agent-{tag}", resource_id=resource_id,
                                   thread_id=thread_id, run_id=run_id, channel="chat", provider="openai",
                                   model="gpt-4o", step_number=step, input_tokens=100, output_tokens=10,
                                   cached_input_tokens=0, reasoning_tokens=0, latency_ms=50, cost="0.00035")
    LedgerResourceDaily.objects.create(day=NOW.date(), resource_id=resource_id, steps=3, priced_steps=3,
                                       input_tokens=300, output_tokens=30, cost="0.00105")
    LedgerDaily.objects.get_or_create(day=NOW.date(), agent_id=f"agent-{tag}", channel="chat", provider="openai",
                                      model="gpt-4o", defaults={"steps": 3, "priced_steps": 3, "input_tokens": 300,
                                                                "output_tokens": 30, "cost": "0.00105"})
    return Planted(resource_id, user, operator, [t1, t2], decided)
