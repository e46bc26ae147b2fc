"""The durable outbox: every platform write is a row first (:func:`outbox_put`), then sent by
:func:`outbox_send_due` in whichever process runs it (the in-process scheduler, Celery).

Exactly once outward (DESIGN invariant 7):

- one row per idempotency key (``answer:<run>:<part>``, ``card:<approval>``, ...): a second
  ``outbox_put`` of the key changes the row, never adds a message;
- a row is claimed with a compare-and-set (``claim``, ``claimed_until``) before it is sent, so
  two workers never send it together; its ``attempts`` count goes up at the claim, *before* the call;
- a post whose row has been claimed before (``attempts`` > 1: a crash or a timeout may have
  happened after the platform accepted it) first looks for its message on the platform by its
  key (Slack: the message's metadata; GitHub: a marker in the comment) and edits that one;
- answers are edited in place: each change of ``body`` bumps ``version``; the row is sent again
  when ``version`` passed ``sent_version``, at most once per ``EDIT_INTERVAL_S[platform]`` (1 s on
  Slack, 2 s on GitHub), so a 200-chunk answer is one post and a few edits, the final text last;
- a rate-limit answer (429, GitHub's secondary limit) holds the row and its bucket until its
  ``Retry-After`` (recorded as a :class:`RateLimitWait`); GitHub writes are spaced per installation
  (``MASTRA_CHANNELS_GITHUB_WRITE_INTERVAL_MS``);
- any other failure is retried with backoff (2, 4, 8 … s, at most 5 min) and after
  ``MASTRA_CHANNELS_MAX_ATTEMPTS`` attempts (or at once for an error no retry cures) the row is
  ``failed`` with the platform's error, shown in the admin, whose retry action sends it again.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents.connections import async_twin
from agents.runtime.channels.text import EDIT_INTERVAL_S

from . import github, slack
from .adapters import channel_adapter
from .models import OutboxBucket, OutboxMessage, RateLimitWait

logger = logging.getLogger(__name__)

#: how long a claimed row is its worker's (a send takes at most the client's timeout)
CLAIM_S = 60.0
MAX_BACKOFF_S = 300.0
#: rows sent at once by one pass
CONCURRENCY = 16


def outbox_put(*, agent_id: str, platform: str, key: str, target: dict, bucket: str, body: str,
               blocks: list | None = None, final: bool = True, op: str = OutboxMessage.Op.POST,
               channel_thread_id: int | None = None, now: datetime | None = None) -> OutboxMessage:
    """Write (or change) the row of ``key``. A changed body or blocks bumps ``version`` and makes
    the row due again, not before its last send plus the platform's edit interval; ``final`` marks
    the row's last version. A failed row stays failed (the admin retries it). Call in a
    transaction when the caller's other writes must commit with it."""
    now = now or timezone.now()
    with transaction.atomic():
        row = OutboxMessage.objects.select_for_update().filter(agent_id=agent_id, platform=platform, key=key).first()
        if row is None:
            return OutboxMessage.objects.create(
                agent_id=agent_id, platform=platform, key=key, target=target, bucket=bucket, body=body,
                blocks=blocks, final=final, op=op, channel_thread_id=channel_thread_id, next_attempt_at=now)
        changed = row.body != body or row.blocks != blocks
        if not changed and (row.final or not final):
            return row
        if changed:
            row.body, row.blocks, row.version = body, blocks, row.version + 1
        row.final = row.final or final
        if row.status != OutboxMessage.Status.FAILED and row.sent_version < row.version:
            row.status = OutboxMessage.Status.PENDING
            row.next_attempt_at = edit_due(row, now)
        row.save()
        return row


def edit_due(row: OutboxMessage, now: datetime) -> datetime:
    """When the row may be sent again: its last send plus the platform's edit interval."""
    if row.last_sent_at is None:
        return now
    return max(now, row.last_sent_at + timedelta(seconds=EDIT_INTERVAL_S.get(row.platform, 1.0)))


@dataclass(frozen=True)
class Claimed:
    """A claimed row as the send needs it (no ORM object crosses into async code)."""

    id: int
    claim: str
    agent_id: str
    platform: str
    key: str
    op: str
    target: dict
    body: str
    blocks: list | None
    version: int
    platform_ref: str
    attempts: int
    bucket: str


def github_interval() -> timedelta:
    return timedelta(milliseconds=settings.MASTRA_CHANNELS_GITHUB_WRITE_INTERVAL_MS)


def outbox_claim(*, now: datetime | None = None, limit: int = 100) -> list[Claimed]:
    """Claim the rows due at ``now`` (compare-and-set; a row another worker holds is skipped),
    skipping buckets held by a rate limit and spacing each GitHub bucket's writes."""
    now = now or timezone.now()
    due = list(OutboxMessage.objects.filter(status=OutboxMessage.Status.PENDING, next_attempt_at__lte=now)
               .filter(Q(claimed_until=None) | Q(claimed_until__lt=now)).order_by("next_attempt_at", "id")[:limit])
    if not due:
        return []
    buckets = {b.key: b for b in OutboxBucket.objects.filter(key__in={row.bucket for row in due})}
    claimed, spaced = [], set()
    for row in due:
        bucket = buckets.get(row.bucket)
        if bucket is not None and bucket.blocked_until is not None and bucket.blocked_until > now:
            continue
        if row.platform == "github":
            if row.bucket in spaced or not bucket_write_take(row.bucket, now):
                continue
            spaced.add(row.bucket)
        token = uuid.uuid4().hex
        taken = OutboxMessage.objects.filter(pk=row.pk, status=OutboxMessage.Status.PENDING, claim=row.claim).filter(
            Q(claimed_until=None) | Q(claimed_until__lt=now)).update(
            claim=token, claimed_until=now + timedelta(seconds=CLAIM_S), attempts=row.attempts + 1)
        if taken:
            claimed.append(Claimed(row.pk, token, row.agent_id, row.platform, row.key, row.op, row.target, row.body,
                                   row.blocks, row.version, row.platform_ref, row.attempts + 1, row.bucket))
    return claimed


def bucket_write_take(key: str, now: datetime) -> bool:
    """Take the bucket's next write slot (compare-and-set on ``last_write_at``); False while the
    pacing interval since its last write has not passed."""
    interval = github_interval()
    OutboxBucket.objects.get_or_create(key=key)
    return bool(OutboxBucket.objects.filter(key=key).filter(
        Q(last_write_at=None) | Q(last_write_at__lte=now - interval)).update(last_write_at=now))


@dataclass(frozen=True)
class SendResult:
    """What one send did: the platform's id of the message (``ref``) and the calls it made, or the
    error with its ``retry_after`` (a rate limit) and whether it is ``permanent``."""

    ref: str = ""
    calls: int = 0
    error: str = ""
    retry_after: float | None = None
    permanent: bool = False


def outbox_record(*, row: Claimed, result: SendResult, now: datetime | None = None) -> None:
    """Record a send's outcome on its row, if the row is still this claim's."""
    now = now or timezone.now()
    with transaction.atomic():
        current = OutboxMessage.objects.select_for_update().filter(pk=row.id, claim=row.claim).first()
        if current is None:
            logger.warning("outbox %s: the claim was lost before its outcome was recorded", row.key)
            return
        current.claim, current.claimed_until = "", None
        current.calls += result.calls
        if result.ref:
            current.platform_ref = result.ref
        if not result.error:
            current.sent_version, current.last_sent_at, current.attempts, current.last_error = row.version, now, 0, ""
            if current.version > row.version:  # changed while it was being sent: again, paced
                current.status, current.next_attempt_at = OutboxMessage.Status.PENDING, edit_due(current, now)
            else:
                current.status = OutboxMessage.Status.SENT
        elif result.retry_after is not None:
            wait = timedelta(seconds=result.retry_after)
            current.attempts = max(0, current.attempts - 1)  # a wait asked by the platform is no failure
            current.next_attempt_at, current.last_error = now + wait, result.error
            OutboxBucket.objects.get_or_create(key=row.bucket)
            OutboxBucket.objects.filter(key=row.bucket).update(blocked_until=now + wait)
            RateLimitWait.objects.create(platform=row.platform, bucket=row.bucket, seconds=result.retry_after)
        else:
            current.last_error = result.error[:2000]
            if result.permanent or current.attempts >= settings.MASTRA_CHANNELS_MAX_ATTEMPTS:
                current.status = OutboxMessage.Status.FAILED
                logger.error("outbox %s failed after %d attempts: %s", row.key, current.attempts, result.error)
            else:
                current.next_attempt_at = now + timedelta(seconds=min(MAX_BACKOFF_S, 2.0 ** current.attempts))
        current.save()


def outbox_retry(*, ids: list[int], now: datetime | None = None) -> int:
    """Send failed rows again (the admin's action): pending now, attempts from zero."""
    return OutboxMessage.objects.filter(pk__in=ids, status=OutboxMessage.Status.FAILED).update(
        status=OutboxMessage.Status.PENDING, attempts=0, next_attempt_at=now or timezone.now(), claim="",
        claimed_until=None)


aoutbox_claim = async_twin(outbox_claim)
aoutbox_record = async_twin(outbox_record)


async def outbox_send(row: Claimed) -> SendResult:
    """Send one claimed row to its platform (never raises: the outcome says what happened)."""
    try:
        _, adapter = channel_adapter(row.agent_id, row.platform)
        sender = slack_send if row.platform == "slack" else github_send
        return await sender(adapter, row)
    except Exception as exc:  # the platform's answer decides what comes next
        module = slack if row.platform == "slack" else github
        answered = getattr(exc, "response", None) is not None  # the platform answered (else: no answer)
        wait = module.retry_after(exc) if answered else None
        text = module.error_text(exc) if answered else f"{type(exc).__name__}: {exc}"
        permanent = module.permanent(exc) if answered and wait is None else False
        if wait is None:
            logger.warning("outbox %s: %s", row.key, text)
        return SendResult(error=text or type(exc).__name__, retry_after=wait, permanent=permanent)


async def slack_send(adapter, row: Claimed) -> SendResult:
    client = adapter.client()
    if row.op == OutboxMessage.Op.EPHEMERAL:
        await slack.ephemeral_post(client, target=row.target, text=row.body)
        return SendResult(calls=1)
    calls, ref = 0, row.platform_ref
    if not ref and row.attempts > 1:  # an earlier try may have posted before it could record it
        ref = await slack.message_find(client, channel=row.target["channel"], thread_ts=row.target.get("thread_ts"),
                                       key=row.key) or ""
        calls += 1
    if not ref:
        ref = await slack.message_post(client, target=row.target, key=row.key, text=row.body, blocks=row.blocks)
        return SendResult(ref=ref, calls=calls + 1)
    await slack.message_update(client, target=row.target, ts=ref, text=row.body, blocks=row.blocks)
    return SendResult(ref=ref, calls=calls + 1)


async def github_send(adapter, row: Claimed) -> SendResult:
    client = adapter.client(row.target.get("installation"))
    if row.op == OutboxMessage.Op.REACT:
        await github.reaction_add(client, target=row.target)
        return SendResult(calls=1)
    calls, ref = 0, row.platform_ref
    if not ref and row.attempts > 1:
        ref = await github.comment_find(client, target=row.target, key=row.key) or ""
        calls += 1
    if not ref:
        ref = await github.comment_create(client, target=row.target, key=row.key, body=row.body)
        return SendResult(ref=ref, calls=calls + 1)
    await github.comment_update(client, target=row.target, key=row.key, comment_id=ref, body=row.body)
    return SendResult(ref=ref, calls=calls + 1)


async def outbox_send_due(*, now: datetime | None = None) -> int:
    """One pass: claim the due rows, send them (up to :data:`CONCURRENCY` at once), record each
    outcome. Returns the rows sent or failed in this pass."""
    rows = await aoutbox_claim(now=now)
    if not rows:
        return 0
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(row: Claimed) -> None:
        async with gate:
            result = await outbox_send(row)
        await aoutbox_record(row=row, result=result, now=now)

    await asyncio.gather(*(one(row) for row in rows))
    return len(rows)


__all__ = ["Claimed", "SendResult", "outbox_claim", "outbox_put", "outbox_record", "outbox_retry", "outbox_send",
           "outbox_send_due"]
