"""The handoff: a received platform event → the agent's thread runtime (``send_message``).

The webhook request stores the event and answers at once; :func:`event_hand_off` runs after it,
in the same process (a task the request starts) or in any process (:func:`events_hand_off_due`,
the background job, for events whose first try did not finish). A claim (``claimed_until``,
compare-and-set) makes one process hand an event at a time, and the input's id
(``ch_<platform>_<event>``) makes the thread refuse a second copy (``duplicate_signal_id``), so an
event is handed once even when a process dies between ``send_message`` and its record.

``send_message`` stores the input before it returns (nothing accepted is lost) and delivers it into
the thread's active run when there is one (a follow-up never starts a second run), else wakes the
thread (the run starts in this process). Before it: the sender's name (Slack ``users.info``,
cached) for the prefix ``[Name (@U123)]: ``, the app's own bot user (``auth.test``: its messages
are not answered) and, on the first mention in an existing Slack thread, the thread's last
``thread_context.max_messages`` messages (``conversations.replies``), given once.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.connections import async_twin
from agents.runtime.channels import ChannelMessage
from agents.runtime.channels.text import sender_prefix
from agents.runtime.errors import SignalError
from agents.runtime.run import maybe_await
from agents.runtime.tracing import if_idle_with_channel

from . import slack
from .adapters import channel_adapter
from .approvals import command_decide
from .identities import slack_bot, slack_user_name
from .inbound import COMMAND, HANDLER_OF
from .models import ChannelEvent, ChannelRun, ChannelThread, OutboxMessage
from .outbox import outbox_put

logger = logging.getLogger(__name__)

CLAIM_S = 60.0
MAX_ATTEMPTS = 5
#: events whose request is still handing them over are left to it this long
GRACE_S = 2.0

#: the handoffs this process started from requests (awaited by tests and at shutdown)
_tasks: set[asyncio.Task] = set()


def event_claim(*, event_id: int, now: datetime) -> dict | None:
    """Claim a received event (compare-and-set); its fields, or None when another process holds it
    or it is done."""
    taken = ChannelEvent.objects.filter(pk=event_id, status=ChannelEvent.Status.RECEIVED).filter(
        Q(claimed_until=None) | Q(claimed_until__lt=now)).update(
        claimed_until=now + timedelta(seconds=CLAIM_S), attempts=F("attempts") + 1)
    if not taken:
        return None
    event = ChannelEvent.objects.get(pk=event_id)
    return {"id": event.pk, "agent_id": event.agent_id, "platform": event.platform, "kind": event.kind,
            "payload": event.payload, "attempts": event.attempts}


def thread_ensure(*, agent_id: str, platform: str, key: str, target: dict, existing: bool = False) -> dict:
    """The channel thread of ``key`` (created on its first message): its memory thread ids.
    ``existing``: the platform thread had messages before the agent's first one (its context is
    still to be read; a thread the agent starts has none)."""
    resource_id = (f"slack:{target.get('team', '')}" if platform == "slack"
                   else f"github:{target['repository'].split('/')[0]}")
    thread_id = f"slack:{key}" if platform == "slack" else key
    thread, _ = ChannelThread.objects.get_or_create(agent_id=agent_id, platform=platform, key=key, defaults={
        "resource_id": resource_id, "thread_id": thread_id, "target": target, "context_fetched": not existing})
    return {"id": thread.pk, "resource_id": thread.resource_id, "thread_id": thread.thread_id,
            "context_fetched": thread.context_fetched}


def event_finish(*, event_id: int, status: str, channel_thread_id: int | None = None, run_id: str = "",
                 requested_by: str = "", context_fetched: bool = False, reaction: dict | None = None,
                 error: str = "", now: datetime | None = None) -> None:
    """Record the handoff: the event's status and run; the run's starter (its default approver);
    the thread open for the relay; GitHub's 👀 on the triggering comment (an outbox row)."""
    now = now or timezone.now()
    with transaction.atomic():
        ChannelEvent.objects.filter(pk=event_id).update(status=status, run_id=run_id or "", error=error[:2000],
                                                        handed_at=now, claimed_until=None,
                                                        channel_thread_id=channel_thread_id)
        if channel_thread_id is None or status != ChannelEvent.Status.HANDED:
            return
        updates = {"relay_open": True, "last_activity_at": now}
        if context_fetched:
            updates["context_fetched"] = True
        ChannelThread.objects.filter(pk=channel_thread_id).update(**updates)
        if run_id:
            ChannelRun.objects.get_or_create(run_id=run_id, defaults={"channel_thread_id": channel_thread_id,
                                                                      "requested_by": requested_by})
            ChannelRun.objects.filter(run_id=run_id, requested_by="").update(requested_by=requested_by)
        if reaction is not None:
            thread = ChannelThread.objects.get(pk=channel_thread_id)
            outbox_put(agent_id=thread.agent_id, platform=thread.platform, key=f"react:{event_id}",
                       target={**thread.target, **reaction}, bucket=reaction["bucket"], body="",
                       op=OutboxMessage.Op.REACT, channel_thread_id=thread.pk, now=now)


def event_release(*, event_id: int, error: str, attempts: int) -> None:
    """A handoff that failed: tried again later, or failed after :data:`MAX_ATTEMPTS`."""
    status = ChannelEvent.Status.FAILED if attempts >= MAX_ATTEMPTS else ChannelEvent.Status.RECEIVED
    ChannelEvent.objects.filter(pk=event_id).update(status=status, error=error[:2000], claimed_until=None)


def events_due(*, now: datetime) -> list[int]:
    """Received events no process holds; with inline handoffs, those older than :data:`GRACE_S`
    (the receiving process is handing them over)."""
    grace = GRACE_S if settings.MASTRA_CHANNELS_HANDOFF_INLINE else 0.0
    return list(ChannelEvent.objects.filter(status=ChannelEvent.Status.RECEIVED, created_at__lte=now - timedelta(
        seconds=grace)).filter(Q(claimed_until=None) | Q(claimed_until__lt=now)).order_by("id")
        .values_list("pk", flat=True)[:200])


aevent_claim = async_twin(event_claim)
athread_ensure = async_twin(thread_ensure)
aevent_finish = async_twin(event_finish)
aevent_release = async_twin(event_release)
aevents_due = async_twin(events_due)


async def event_hand_off(event_id: int, *, now: datetime | None = None) -> str:
    """Hand one received event to its agent (see the module docstring). Returns ``handed``,
    ``ignored``, ``busy`` (another process holds it, or it is done) or ``error`` (tried again later)."""
    claimed = await aevent_claim(event_id=event_id, now=now or timezone.now())
    if claimed is None:
        return "busy"
    try:
        agent, adapter = channel_adapter(claimed["agent_id"], claimed["platform"])
        if claimed["kind"] == COMMAND:
            await command_decide(agent, adapter, claimed)
            await aevent_finish(event_id=event_id, status=ChannelEvent.Status.HANDED)
            return "handed"
        return await message_hand_off(agent, adapter, claimed)
    except Exception as exc:
        logger.exception("handing channel event %s to its agent failed (attempt %d)", event_id, claimed["attempts"])
        await aevent_release(event_id=event_id, error=f"{type(exc).__name__}: {exc}", attempts=claimed["attempts"])
        return "error"


async def message_hand_off(agent, adapter, event: dict) -> str:
    payload, platform = event["payload"], event["platform"]
    handler = agent.channels.handler(HANDLER_OF[event["kind"]])
    if handler is False:
        await aevent_finish(event_id=event["id"], status=ChannelEvent.Status.IGNORED,
                            error=f"{HANDLER_OF[event['kind']]} is disabled")
        return "ignored"
    user = payload["user"]
    if platform == "slack" and user in await slack_bot(adapter):
        await aevent_finish(event_id=event["id"], status=ChannelEvent.Status.IGNORED, error="the app's own message")
        return "ignored"
    thread = await athread_ensure(agent_id=agent.id, platform=platform, key=payload["thread_key"],
                                  target=payload["target"], existing=bool(payload.get("existing_thread")))
    name = await slack_user_name(adapter, user) if platform == "slack" else user
    context, fetched = "", False
    limit = agent.channels.context_messages
    if platform == "slack" and event["kind"] == "mention" and payload.get("existing_thread") and limit \
            and not thread["context_fetched"]:
        context, fetched = await slack_context(adapter, payload, limit), True
    contents = (f"{context}\n\n" if context else "") + sender_prefix(name, user) + payload["text"]
    message = ChannelMessage(platform=platform, kind=event["kind"], thread_key=payload["thread_key"],
                             resource_id=thread["resource_id"], thread_id=thread["thread_id"], user=user,
                             user_name=name, text=payload["text"], contents=contents,
                             details={k: v for k, v in payload.items() if k not in ("text", "target")})
    outcome: dict = {}

    async def default(message: ChannelMessage):
        result = await send(agent, event, message)
        outcome["run_id"] = result.run_id if result is not None else ""
        return result

    if handler is None:
        await default(message)
    else:
        await maybe_await(handler(message, default))
    if "run_id" not in outcome:  # the handler chose not to answer
        await aevent_finish(event_id=event["id"], status=ChannelEvent.Status.IGNORED, error="the handler did not answer")
        return "ignored"
    reaction = None
    if platform == "github" and payload.get("reaction"):
        reaction = {"reaction": payload["reaction"], "item_id": payload["item_id"], "bucket": payload["bucket"]}
    await aevent_finish(event_id=event["id"], status=ChannelEvent.Status.HANDED, channel_thread_id=thread["id"],
                        run_id=outcome["run_id"] or "", requested_by=user, context_fetched=fetched, reaction=reaction)
    return "handed"


async def send(agent, event: dict, message: ChannelMessage):
    """``send_message`` with the event's own input id; None when the thread has it already."""
    try:
        return await agent.send_message(
            {"contents": message.contents, "id": f"ch_{event['platform']}_{event['id']}",
             "metadata": {"channel": {"platform": message.platform, "user": message.user, "name": message.user_name,
                                      "thread": message.thread_key}}},
            resource_id=message.resource_id, thread_id=message.thread_id,
            # the run it starts came from the platform (the cost ledger's channel: slack, github)
            if_idle=if_idle_with_channel(None, message.platform))
    except SignalError as exc:
        if exc.code != "duplicate_signal_id":
            raise
        return None  # handed before, by a try that could not record it


async def slack_context(adapter, payload: dict, limit: int) -> str:
    """The thread's earlier messages, each with its sender's prefix."""
    history = await slack.thread_history(adapter.client(), channel=payload["channel"],
                                         thread_ts=payload["thread_ts"], before_ts=payload["ts"], limit=limit)
    lines = []
    for item in history:
        who = item.get("user") or item.get("bot_id") or "unknown"
        name = await slack_user_name(adapter, item["user"]) if item.get("user") else (
            item.get("username") or "bot")
        lines.append(sender_prefix(name, who) + (item.get("text") or ""))
    if not lines:
        return ""
    return "Earlier messages in this thread:\n" + "\n".join(lines)


def hand_off_soon(event_id: int) -> None:
    """Start the handoff of an event just stored, on this loop, after the request's reply."""
    task = asyncio.get_running_loop().create_task(event_hand_off(event_id), name=f"channel-handoff-{event_id}")
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def handoffs_wait(timeout: float = 10.0) -> None:
    """Wait for the handoffs this process started (tests; a process about to stop)."""
    while _tasks:
        await asyncio.wait(list(_tasks), timeout=timeout)


async def events_hand_off_due(*, now: datetime | None = None) -> int:
    """Hand off the received events no process finished (a crash, a failed try); returns how many."""
    count = 0
    for event_id in await aevents_due(now=now or timezone.now()):
        if await event_hand_off(event_id, now=now) == "handed":
            count += 1
    return count


__all__ = ["event_hand_off", "events_hand_off_due", "hand_off_soon", "handoffs_wait", "message_hand_off",
           "thread_ensure"]
