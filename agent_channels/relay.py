"""The relay: a channel thread's run chunks (the memory thread's event log) → outbox rows.

Whichever process runs a thread's run, its chunks are in the thread's event log
(``agents.ThreadEvent``, with ``seq``). :func:`thread_relay` reads the events after the channel
thread's ``relay_seq`` and, in one transaction that also moves ``relay_seq`` (a compare-and-set,
so two relays never relay an event twice):

- appends each run's text (``text-delta``) to its :class:`ChannelRun` and puts its answer rows
  (``answer:<run>:<part>``, the text split at the platform's limit): one message per part, edited
  as it grows; ``finish`` (not ``suspended``) or ``abort`` marks them final;
- a ``tool-call-approval`` puts an approval card (``card:<approval>``);
- a run that ends in error posts one short reason (``failed:<run>``), once.

:func:`relay_due` runs it for every channel thread that may have something to relay
(``relay_open``; the handoff and the approvals open it, the relay closes it when its runs are over).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from agents.connections import async_twin
from agents.models import Run, ThreadEvent
from agents.runtime.channels.text import GITHUB_BODY_LIMIT, SLACK_TEXT_LIMIT, failed_text, split_text
from agents.runtime.errors import MastraError
from agents.runtime.storage import approval_hash
from agents.runtime.threads import thread_key

from .adapters import channel_adapter
from .cards import card_pending
from .models import ChannelApproval, ChannelRun, ChannelThread
from .outbox import outbox_put

logger = logging.getLogger(__name__)

BATCH = 500
#: a run in one of these states has ended, whatever its log says
ENDED = (Run.Status.COMPLETED, Run.Status.FAILED, Run.Status.ABORTED)
TEXT_LIMIT = {"slack": SLACK_TEXT_LIMIT, "github": GITHUB_BODY_LIMIT}


def bucket_of(thread: ChannelThread) -> str:
    target = thread.target
    if thread.platform == "slack":
        return f"slack:{target.get('team', '')}"
    installation = target.get("installation")
    return f"github:{installation if installation is not None else target['repository'].split('/')[0]}"


def thread_relay(*, channel_thread_id: int, now: datetime | None = None) -> int:
    """Relay the channel thread's new events (see the module docstring); returns how many."""
    now = now or timezone.now()
    with transaction.atomic():
        thread = ChannelThread.objects.select_for_update().filter(pk=channel_thread_id).first()
        if thread is None:
            return 0
        key = thread_key(thread.resource_id, thread.thread_id)
        events = list(ThreadEvent.objects.filter(thread_id=key, seq__gt=thread.relay_seq).order_by("seq")[:BATCH])
        if not events:
            ended = runs_ended(thread)
            # a run's end writes its last events and its record in one transaction, which may have
            # committed between the read above and this one (PostgreSQL reads each statement's own
            # snapshot): its events are there now, and the next pass relays them with its finish
            if ended and ThreadEvent.objects.filter(thread_id=key, seq__gt=thread.relay_seq).exists():
                return 0
            runs_end(thread, ended, now)
            # a run suspended on an approval keeps the thread open: it may be decided anywhere
            # (a card, the chat page, the admin) and its continuation is relayed like the rest
            if not ChannelRun.objects.filter(channel_thread=thread, finished=False).exists():
                ChannelThread.objects.filter(pk=thread.pk, relay_seq=thread.relay_seq).update(relay_open=False)
            return 0
        # the compare-and-set that makes this relay the only one of these events
        if not ChannelThread.objects.filter(pk=thread.pk, relay_seq=thread.relay_seq).update(
                relay_seq=events[-1].seq, last_activity_at=now):
            return 0
        runs: dict[str, ChannelRun] = {}
        for event in events:
            if not event.run_id:
                continue
            run = runs.get(event.run_id)
            if run is None:
                run, _ = ChannelRun.objects.get_or_create(run_id=event.run_id, defaults={"channel_thread": thread})
                runs[event.run_id] = run
            chunk_apply(thread, run, event.chunk, now)
        for run in runs.values():
            run.save()
            answer_put(thread, run, now)
        return len(events)


def runs_ended(thread: ChannelThread) -> set[str]:
    """The thread's runs not finished in the relay whose record says they ended."""
    waiting = ChannelRun.objects.filter(channel_thread=thread, finished=False)
    return set(Run.objects.filter(id__in=waiting.values("run_id"), status__in=ENDED).values_list("id", flat=True))


def runs_end(thread: ChannelThread, ended: set[str], now: datetime) -> None:
    """Runs that ended (``ended``, :func:`runs_ended`) without a ``finish`` in the log (their process
    died; recovery answers their inputs in a new run): their answers are final as they stand,
    without a failure notice."""
    if not ended:
        return
    for run in ChannelRun.objects.filter(channel_thread=thread, finished=False, run_id__in=ended):
        run.finished, run.finish_reason = True, "ended"
        run.save()
        answer_put(thread, run, now)


def chunk_apply(thread: ChannelThread, run: ChannelRun, chunk: dict, now: datetime) -> None:
    kind, payload = chunk.get("type"), chunk.get("payload") or {}
    if kind == "start":
        run.finish_reason = ""  # a run resumed after an approval goes on
    elif kind == "text-start" and run.text and not run.text.endswith("\n"):
        run.text += "\n\n"  # the text of another step: a paragraph of its own
    elif kind == "text-delta":
        run.text += payload.get("text") or ""
    elif kind == "tool-call-approval":
        approval_card_put(thread, run, payload, now)
    elif kind == "error":
        run.error = ((payload.get("error") or {}).get("message") or "error")[:2000]
    elif kind == "finish":
        reason = (payload.get("stepResult") or {}).get("reason") or "stop"
        run.finish_reason = reason
        run.finished = reason != "suspended"
    elif kind == "abort":
        run.finish_reason, run.finished = "abort", True


def answer_put(thread: ChannelThread, run: ChannelRun, now: datetime) -> None:
    common = {"agent_id": thread.agent_id, "platform": thread.platform, "target": thread.target,
              "bucket": bucket_of(thread), "channel_thread_id": thread.pk, "now": now}
    if run.text:
        for index, part in enumerate(split_text(run.text, TEXT_LIMIT[thread.platform])):
            outbox_put(key=f"answer:{run.run_id}:{index}", body=part, final=run.finished, **common)
    if run.finished and run.finish_reason == "error":
        outbox_put(key=f"failed:{run.run_id}", body=failed_text(run.error or "error"), **common)


def approval_card_put(thread: ChannelThread, run: ChannelRun, payload: dict, now: datetime) -> None:
    tool_name, args = payload.get("toolName") or "", payload.get("args")
    approval, _ = ChannelApproval.objects.get_or_create(
        run_id=run.run_id, tool_call_id=payload.get("toolCallId") or "",
        defaults={"agent_id": thread.agent_id, "platform": thread.platform, "channel_thread": thread,
                  "tool_name": tool_name, "args": args if args is not None else {},
                  "args_hash": approval_hash(tool_name, args if args is not None else {}),
                  "requested_by": run.requested_by})
    try:
        _, adapter = channel_adapter(thread.agent_id, thread.platform)
        cards = getattr(adapter, "cards", True)
    except MastraError:
        cards = True
    text, blocks = card_pending(approval, platform=thread.platform, cards=cards)
    outbox_put(agent_id=thread.agent_id, platform=thread.platform, key=f"card:{approval.pk}", target=thread.target,
               bucket=bucket_of(thread), body=text, blocks=blocks, channel_thread_id=thread.pk, now=now)


def relay_open_ids() -> list[int]:
    return list(ChannelThread.objects.filter(relay_open=True).values_list("pk", flat=True)[:1000])


arelay_open_ids = async_twin(relay_open_ids)
athread_relay = async_twin(thread_relay)


async def relay_due(*, now: datetime | None = None) -> int:
    """One pass over the channel threads with something to relay; returns the events relayed."""
    total = 0
    for pk in await arelay_open_ids():
        try:
            total += await athread_relay(channel_thread_id=pk, now=now)
        except Exception:
            logger.exception("relay of channel thread %s failed; it is tried again next pass", pk)
    return total


__all__ = ["bucket_of", "relay_due", "thread_relay"]
