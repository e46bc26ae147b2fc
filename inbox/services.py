"""Writes to the notification inbox. Each service is one transaction; callers in async code reach
them through ``sync_to_async`` (``inbox.store``, ``inbox.dispatcher``, ``inbox.tool``).

Claims are compare-and-set: a row is taken only while it is pending and unclaimed (or its claim
expired), and changed afterwards only by the holder of its ``lock_token``.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from agents.models import Message, ThreadInput
from agents.runtime.notifications import MAX_DELIVERY_ATTEMPTS, PRIORITY_RANK

from .models import RECORD_FIELDS, NotificationRecord, new_record_id

PENDING = NotificationRecord.Status.PENDING
#: fields the runtime may change through ``notifications_update``
UPDATABLE = frozenset({
    "status", "priority", "deliver_at", "summary_at", "deliver_when_idle", "next_due_at", "delivery_reason",
    "delivery_attempts", "last_delivery_error", "last_delivery_attempt_at", "delivered_signal_id",
    "summary_signal_id", "attempt_signal_id", "attempt_kind", "lock_token", "locked_until", "seen_at",
    "dismissed_at", "archived_at", "discarded_at", "delivered_at",
})


def _unclaimed(now: datetime, token: str | None = None) -> Q:
    q = Q(lock_token="") | Q(locked_until__lt=now)
    return q | Q(lock_token=token) if token else q


_MERGED = ("summary", "payload", "priority", "priority_rank", "attributes", "metadata", "coalesced_count",
           "dedupe_key", "coalesce_key", "source_id", "lock_token", "locked_until", "updated_at")


def _merge(record: NotificationRecord, n: dict, *, token: str, locked_until: datetime, now: datetime) -> None:
    """Coalesce notification ``n`` into ``record``: content and priority replaced, attributes and
    metadata merged, ``coalesced_count`` + 1."""
    record.summary = n["summary"]
    record.payload = n["payload"]
    record.priority = n["priority"]
    record.priority_rank = PRIORITY_RANK[n["priority"]]
    record.attributes = {**(record.attributes or {}), **n["attributes"]}
    record.metadata = {**(record.metadata or {}), **n["metadata"]}
    record.coalesced_count += 1
    record.dedupe_key = record.dedupe_key or n["dedupe_key"]
    record.coalesce_key = record.coalesce_key or n["coalesce_key"]
    if n["source_id"]:
        record.source_id = n["source_id"]
    record.lock_token = token
    record.locked_until = locked_until
    record.updated_at = now


def _coalesce_target(*, agent_id: str, resource_id: str, thread_id: str, notification: dict, token: str,
                     now: datetime) -> NotificationRecord | None:
    """The oldest unclaimed pending record ``notification`` coalesces into, locked (PostgreSQL).

    Raw SQL on purpose: this runs on every ingest and the ORM spends longer compiling the query than
    the database spends answering it (see bench/inbox.py)."""
    table = NotificationRecord._meta.db_table
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    sql = (f"SELECT * FROM {table} WHERE agent_id = %s AND resource_id = %s AND thread_id = %s AND source = %s "
           f"AND kind = %s AND status = %s AND (dedupe_key = %s OR coalesce_key = %s) "
           f"AND (lock_token = '' OR locked_until < %s OR lock_token = %s) ORDER BY created_at LIMIT 1{lock}")
    params = [agent_id, resource_id, thread_id, notification["source"], notification["kind"], PENDING,
              notification["dedupe_key"], notification["coalesce_key"], now, token]
    return next(iter(NotificationRecord.objects.raw(sql, params)), None)


def notifications_ingest(*, agent_id: str, resource_id: str, thread_id: str, notifications: list[dict], token: str,
                         locked_until: datetime, now: datetime) -> list[dict]:
    """Create or coalesce each (validated) notification and claim the rows with ``token``.

    A notification coalesces into the oldest *unclaimed* pending record of the same agent, thread,
    source and kind whose dedupe key or coalesce key is the same (a record another process is
    delivering right now is not pending any more for this purpose: a new record is created).
    Returns one record dict per notification, in order, with ``coalesced``.
    """
    out: list[dict] = []
    created: list[NotificationRecord] = []
    changed: dict[str, NotificationRecord] = {}
    by_key: dict[tuple, NotificationRecord] = {}  # records of this batch, by (source, kind, key kind, key)
    with transaction.atomic():
        for n in notifications:
            keys = [("dedupe", n["dedupe_key"]), ("coalesce", n["coalesce_key"])]
            keys = [(kind, value) for kind, value in keys if value]
            record = next((by_key[(n["source"], n["kind"], *k)] for k in keys
                           if (n["source"], n["kind"], *k) in by_key), None)
            if record is None and keys:
                record = _coalesce_target(agent_id=agent_id, resource_id=resource_id, thread_id=thread_id,
                                          notification=n, token=token, now=now)
            if record is not None:
                _merge(record, n, token=token, locked_until=locked_until, now=now)
                if not record._state.adding:
                    changed[record.id] = record
                coalesced = True
            else:
                record = NotificationRecord(
                    id=new_record_id(), agent_id=agent_id, resource_id=resource_id, thread_id=thread_id,
                    source=n["source"], source_id=n["source_id"], kind=n["kind"], priority=n["priority"],
                    priority_rank=PRIORITY_RANK[n["priority"]], summary=n["summary"], payload=n["payload"],
                    dedupe_key=n["dedupe_key"], coalesce_key=n["coalesce_key"], attributes=n["attributes"],
                    metadata=n["metadata"], lock_token=token, locked_until=locked_until, created_at=now,
                    updated_at=now)
                created.append(record)
                coalesced = False
            for k in keys:
                by_key.setdefault((n["source"], n["kind"], *k), record)
            out.append((record, coalesced))
        for start in range(0, len(created), 200):
            _insert(created[start:start + 200])
        for record in changed.values():
            _update_claimed([record.id], {name: getattr(record, name) for name in _MERGED}, None)
    return [{**record.to_record(), "coalesced": coalesced} for record, coalesced in out]


# The hot paths (every ingest writes one or two rows) build their SQL directly from the model's
# fields: on these one-row statements the ORM's query compilation costs more than the database does.
# Values go through each field's ``get_db_prep_save``, exactly as the ORM would send them.

def _update_claimed(ids: list[str], fields: dict, token: str | None) -> int:
    """``UPDATE … SET fields WHERE id IN ids [AND lock_token = token]``; returns the rows changed."""
    meta = NotificationRecord._meta
    quote = connection.ops.quote_name
    assignments, params = [], []
    for name, value in fields.items():
        field = meta.get_field(name)
        assignments.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    sql = (f"UPDATE {quote(meta.db_table)} SET {', '.join(assignments)} "
           f"WHERE id IN ({', '.join(['%s'] * len(ids))})")
    if token is not None:
        sql += " AND lock_token = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *ids, *([token] if token is not None else [])])
        return cursor.rowcount


def _insert(records: list[NotificationRecord]) -> None:
    """``INSERT`` the (complete, unsaved) records in one statement."""
    meta = NotificationRecord._meta
    quote = connection.ops.quote_name
    fields = meta.concrete_fields
    row = f"({', '.join(['%s'] * len(fields))})"
    sql = (f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
           f"VALUES {', '.join([row] * len(records))}")
    params = [f.get_db_prep_save(getattr(record, f.attname), connection) for record in records for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    for record in records:
        record._state.adding = False


def notifications_update(*, updates: list[dict], token: str) -> int:
    """Apply ``{"id", **fields}`` to each record still claimed by ``token`` (compare-and-set on
    ``lock_token``); returns how many rows changed. Updates with the same fields are written in one
    statement (``UPDATE … WHERE id IN …`` or a ``CASE`` per field)."""
    now = timezone.now()
    groups: dict[tuple, list[dict]] = {}
    for update in updates:
        fields = {k: v for k, v in update.items() if k != "id"}
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise ValueError(f"cannot update notification field {sorted(unknown)[0]!r}")
        if "priority" in fields:
            fields["priority_rank"] = PRIORITY_RANK[fields["priority"]]
        fields["updated_at"] = now
        groups.setdefault(tuple(sorted(fields)), []).append({"id": update["id"], **fields})
    statements = []
    for names, rows in groups.items():
        first = {k: rows[0][k] for k in names}
        if all({k: r[k] for k in names} == first for r in rows[1:]):
            statements.append(lambda ids=[r["id"] for r in rows], fields=first: _update_claimed(ids, fields, token))
        else:
            objs = [NotificationRecord(**r) for r in rows]
            statements.append(lambda objs=objs, names=list(names): NotificationRecord.objects.filter(
                lock_token=token).bulk_update(objs, names))
    if len(statements) == 1:
        return statements[0]()
    with transaction.atomic():
        return sum(statement() for statement in statements)


def _accepted(signal_id: str) -> str | None:
    """How the thread took a signal whose send was interrupted: ``delivered``, ``persisted`` or None."""
    if ThreadInput.objects.filter(input_id=signal_id).exists():
        return "delivered"
    if Message.objects.filter(message_id=signal_id).exists():
        return "persisted"
    return None


def _settle_interrupted(record: NotificationRecord, now: datetime) -> bool:
    """A claim expired while its signal was being sent. When the thread accepted the signal, record
    that (it is never sent again) and return True; otherwise forget the attempt (it is retried)."""
    signal_id, kind = record.attempt_signal_id, record.attempt_kind
    record.attempt_signal_id, record.attempt_kind = None, ""
    accepted = _accepted(signal_id)
    if accepted is None:
        return False
    if kind == "summary":
        record.summary_signal_id, record.summary_at = signal_id, None
    elif accepted == "delivered":
        record.status, record.delivered_signal_id, record.delivered_at = NotificationRecord.Status.DELIVERED, signal_id, now
        record.deliver_at = record.summary_at = None
    else:  # persisted by the thread: stays pending, no longer scheduled
        record.deliver_at, record.deliver_when_idle = None, False
    dues = [t for t in (record.deliver_at, record.summary_at) if t is not None]
    record.next_due_at = min(dues) if dues and record.status == PENDING else None
    record.lock_token, record.locked_until, record.updated_at = "", None, now
    record.save()
    return True


def notifications_claim_due(*, now: datetime, limit: int, token: str, locked_until: datetime,
                            per_thread_limit: int = 1000) -> dict:
    """Claim up to ``limit`` due pending records, highest priority first, for ``token``, and then the
    other due records of their threads (up to ``per_thread_limit`` × threads; a thread is planned whole).

    Records whose previous claim expired mid-send are settled here when the thread had accepted the
    signal. Returns ``{"records": [...], "recovered": n}``.
    """
    with transaction.atomic():
        ids = list(NotificationRecord.objects.filter(status=PENDING, next_due_at__lte=now)
                   .filter(_unclaimed(now)).order_by("-priority_rank", "next_due_at")
                   .values_list("id", flat=True)[:limit])
        if not ids:
            return {"records": [], "recovered": 0}
        NotificationRecord.objects.filter(pk__in=ids, status=PENDING).filter(_unclaimed(now)).update(
            lock_token=token, locked_until=locked_until)
        # the rest of those threads' due records go with them (one summary per thread, not per batch)
        threads = set(NotificationRecord.objects.filter(pk__in=ids, lock_token=token).values_list(
            "agent_id", "resource_id", "thread_id"))
        claimed = list(ids)
        if threads:
            same_threads = Q()
            for agent_id, resource_id, thread_id in threads:
                same_threads |= Q(agent_id=agent_id, resource_id=resource_id, thread_id=thread_id)
            more = list(NotificationRecord.objects.filter(same_threads, status=PENDING, next_due_at__lte=now)
                        .filter(_unclaimed(now)).order_by("-priority_rank", "next_due_at")
                        .values_list("id", flat=True)[:per_thread_limit * len(threads)])
            if more:
                NotificationRecord.objects.filter(pk__in=more, status=PENDING).filter(_unclaimed(now)).update(
                    lock_token=token, locked_until=locked_until)
                claimed += more
        rows = NotificationRecord.objects.filter(pk__in=claimed, lock_token=token).values(*RECORD_FIELDS)
        recovered = 0
        records = []
        for row in rows:
            if row["attempt_signal_id"]:
                if _settle_interrupted(NotificationRecord.objects.get(pk=row["id"]), now):
                    recovered += 1
                    continue
                NotificationRecord.objects.filter(pk=row["id"]).update(attempt_signal_id=None, attempt_kind="")
                row.update(attempt_signal_id=None, attempt_kind="")
            records.append(row)
    records.sort(key=lambda r: (-PRIORITY_RANK[r["priority"]], r["next_due_at"]))
    return {"records": records, "recovered": recovered}


def notifications_fail(*, ids: list[str], token: str, error: str, now: datetime, retry_in) -> int:
    """Count a failed attempt on records claimed by ``token`` and unclaim them; ``failed`` after
    :data:`MAX_DELIVERY_ATTEMPTS` failures, else due again after ``retry_in`` × attempts."""
    failed = 0
    with transaction.atomic():
        for row in NotificationRecord.objects.filter(pk__in=ids, lock_token=token):
            row.delivery_attempts += 1
            row.last_delivery_error = error[:2000]
            row.last_delivery_attempt_at = now
            if row.delivery_attempts >= MAX_DELIVERY_ATTEMPTS:
                row.status, row.next_due_at = NotificationRecord.Status.FAILED, None
                failed += 1
            else:
                row.next_due_at = now + retry_in * row.delivery_attempts
            row.attempt_signal_id, row.attempt_kind = None, ""
            row.lock_token, row.locked_until, row.updated_at = "", None, now
            row.save()
    return failed


def _set_status(ids: list[str], status: str, stamp: str, *, from_statuses: list[str], now: datetime | None) -> int:
    """A person's (or the model's) filing wins over a dispatcher holding the record: the claim is
    dropped, so the dispatcher's compare-and-set cannot turn the record back into ``delivered``."""
    now = now or timezone.now()
    return NotificationRecord.objects.filter(pk__in=list(ids), status__in=from_statuses).update(
        status=status, next_due_at=None, lock_token="", locked_until=None, updated_at=now, **{stamp: now})


def notification_dismiss(*, ids: list[str], now: datetime | None = None) -> int:
    """Dismiss records (pending, delivered, seen or failed): never emitted again."""
    return _set_status(ids, NotificationRecord.Status.DISMISSED, "dismissed_at", now=now,
                       from_statuses=["pending", "delivered", "seen", "failed"])


def notification_archive(*, ids: list[str], now: datetime | None = None) -> int:
    """Archive records (any status but archived)."""
    return _set_status(ids, NotificationRecord.Status.ARCHIVED, "archived_at", now=now,
                       from_statuses=["pending", "delivered", "seen", "dismissed", "discarded", "failed"])


def notification_mark_seen(*, ids: list[str], now: datetime | None = None) -> int:
    """Mark pending or delivered records seen (a pending one is then never delivered in full)."""
    return _set_status(ids, NotificationRecord.Status.SEEN, "seen_at", now=now, from_statuses=["pending", "delivered"])


def notification_read(*, record_id: str, signal_id: str, now: datetime | None = None) -> str | None:
    """The inbox tool read a record. A pending, unclaimed one is marked seen with ``signal_id`` as
    the signal that carried it (the caller injects it) and ``"inject"`` is returned; a delivered one
    is just marked seen (``"seen"``); otherwise nothing changes (None)."""
    now = now or timezone.now()
    with transaction.atomic():
        if NotificationRecord.objects.filter(pk=record_id, status=PENDING).filter(_unclaimed(now)).update(
                status=NotificationRecord.Status.SEEN, seen_at=now, delivered_signal_id=signal_id, next_due_at=None,
                updated_at=now):
            return "inject"
        if NotificationRecord.objects.filter(pk=record_id, status=NotificationRecord.Status.DELIVERED).update(
                status=NotificationRecord.Status.SEEN, seen_at=now, updated_at=now):
            return "seen"
    return None


def notifications_deliver_now(*, ids: list[str], now: datetime | None = None) -> int:
    """Make pending (or failed) records due for a full delivery at the next dispatch, even into an
    active run; a failed record gets a fresh set of attempts."""
    now = now or timezone.now()
    return NotificationRecord.objects.filter(pk__in=list(ids), status__in=["pending", "failed"]).update(
        status=PENDING, deliver_at=now, next_due_at=now, deliver_when_idle=False, delivery_attempts=0,
        delivery_reason="delivered now by an operator", updated_at=now)
