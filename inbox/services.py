"""Writes to the notification inbox. Each service is one transaction; callers in async code reach
them through ``agents.connections.async_twin`` (``inbox.store``, ``inbox.dispatcher``, ``inbox.tool``).

Claims are compare-and-set: a row is taken only while it is pending and unclaimed (or its claim
expired), and changed afterwards only by the holder of its ``lock_token``.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Q
from django.utils import timezone

from agents.threads.activity import thread_states_get
from agents.threads.identity import thread_key, threads_ensure
from agents.models import Message, ThreadInput, thread_id_of
from agents.runtime.notifications import MAX_DELIVERY_ATTEMPTS, PRIORITY_RANK

from .models import RECORD_FIELDS, NotificationRecord, new_record_id

logger = logging.getLogger(__name__)

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
#: every field the ingest may write on an existing row
_WRITABLE = frozenset(_MERGED) | UPDATABLE


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


def notifications_ingest(*, agent_id: str, resource_id: str, thread_id: str, notifications: list[dict], token: str,
                         locked_until: datetime, now: datetime) -> list[dict]:
    """Create or coalesce each (validated) notification and claim the rows with ``token``.

    A notification coalesces into the oldest *unclaimed* pending record of the same agent, thread,
    source and kind whose dedupe key or coalesce key is the same (a record another process is
    delivering right now is not pending any more for this purpose: a new record is created).
    Returns one record dict per notification, in order, with ``coalesced``. One call of
    :func:`notifications_ingest_batch`.
    """
    call = {"agent_id": agent_id, "resource_id": resource_id, "thread_id": thread_id,
            "notifications": notifications, "token": token, "locked_until": locked_until, "now": now}
    return notifications_ingest_batch(calls=[call])[0]["records"]


def notifications_group_commit(*, ingests: list[dict], updates: list[dict]) -> dict:
    """One transaction for what concurrent ``send_notification_signal`` calls of one process asked
    for meanwhile (``inbox.store``): the ``updates`` jobs (``{"updates", "token"}``, see
    :func:`notifications_update`) first, then the ``ingests`` (see :func:`notifications_ingest_batch`).
    An updates job only settles records an earlier call claimed, so running it first is running it
    as if it had committed just before. Any database error rolls everything back and is raised.

    Returns ``{"updates": [rows changed per job], "ingests": [outcome per call]}``.
    """
    with transaction.atomic(savepoint=False):
        changed = [notifications_update(**job) for job in updates]
        outcomes = notifications_ingest_batch(calls=ingests) if ingests else []
    return {"updates": changed, "ingests": outcomes}


def notifications_ingest_batch(*, calls: list[dict]) -> list[dict]:
    """Ingest the notifications of several calls, in order, in one transaction.

    A call is ``{"agent_id", "resource_id", "thread_id", "notifications", "token", "locked_until",
    "now"}`` (the arguments of :func:`notifications_ingest`), plus optionally ``"thread_key"`` (read
    that thread's state: ``"thread"`` in the outcome, None without a lease) and ``"plan"``, a
    callable ``plan(records, thread_state) -> {"updates": [{"id", **fields}], ...}`` run once the
    call's records are ingested; its updates (fields of :data:`UPDATABLE`, on the call's own
    records) are written with the records, and its result is returned as ``"planned"``. A plan that
    raises is logged and leaves that call's records claimed and undecided (no ``"planned"``).

    Coalescing is :func:`notifications_ingest`'s, call after call: a call sees the records earlier
    calls of the batch created or changed (a record an earlier call released is coalesced into; one
    it still claims is not). Statements, whatever the number of calls: one ``SELECT`` of the calls'
    threads (and one ``INSERT`` of those missing), one ``SELECT … FOR UPDATE``
    of the coalescing candidates (when a notification has a key), one ``SELECT`` of the thread leases
    (when a call has ``thread_key``), one ``INSERT`` (executemany) of the new records, one ``UPDATE``
    (executemany) per set of changed columns. Returns ``[{"records", "thread"?, "planned"?}]`` in call order.

    The calls' threads are created when missing (a record points at its thread's row, by the
    thread's key: its ``thread_id`` column holds the key).
    """
    with transaction.atomic(savepoint=False):
        threads_ensure({(call["resource_id"], call["thread_id"]) for call in calls})
        rows = _coalesce_candidates(calls)
        pool, batch = _Candidates(rows), _BatchWrites(rows)
        states = thread_states_get(keys={call["thread_key"] for call in calls if call.get("thread_key")},
                                   checked=True)
        outcomes = [_ingest_call(call, pool, states, batch) for call in calls]
        batch.write()
    return outcomes


def _coalesce_candidates(calls: list[dict]) -> list[NotificationRecord]:
    """The unclaimed pending records the notifications of ``calls`` may coalesce into, oldest first,
    locked (PostgreSQL): a superset, one condition per resource, source, kind and agent (an index
    scan of ``notif_pending_thread`` each) over those threads and keys; ``_Candidates`` picks the
    exact match per notification (same thread, a key of its own, unclaimed at the call's ``now``).

    Raw SQL on purpose: this runs on every ingest and the ORM spends longer compiling the query than
    the database spends answering it (see bench/inbox.py)."""
    groups: dict[tuple, tuple[set, set, set]] = {}
    for call in calls:
        for n in call["notifications"]:
            if n["dedupe_key"] or n["coalesce_key"]:
                threads, dedupe, coalesce = groups.setdefault(
                    (call["resource_id"], n["source"], n["kind"], call["agent_id"]), (set(), set(), set()))
                threads.add(thread_key(call["resource_id"], call["thread_id"]))
                if n["dedupe_key"]:
                    dedupe.add(n["dedupe_key"])
                if n["coalesce_key"]:
                    coalesce.add(n["coalesce_key"])
    if not groups:
        return []

    def one_of(column: str, values: set) -> str:
        params.extend(sorted(values))
        return f"{column} = %s" if len(values) == 1 else f"{column} IN ({', '.join(['%s'] * len(values))})"

    db = connections[DEFAULT_DB_ALIAS]
    clauses, params = [], [PENDING, max(call["now"] for call in calls)]  # claims are checked per call later
    for (resource_id, source, kind, agent_id), (threads, dedupe, coalesce) in groups.items():
        params += [resource_id]
        in_threads = one_of("thread_id", threads)
        params += [source, kind, agent_id]
        keys = [one_of(column, values) for column, values in (("dedupe_key", dedupe), ("coalesce_key", coalesce))
                if values]
        clauses.append(f"(resource_id = %s AND {in_threads} AND source = %s AND kind = %s AND agent_id = %s"
                       f" AND ({' OR '.join(keys)}))")
    lock = " FOR UPDATE" if db.features.has_select_for_update else ""
    sql = (f"SELECT * FROM {NotificationRecord._meta.db_table} WHERE status = %s "
           f"AND (lock_token = '' OR locked_until < %s) AND ({' OR '.join(clauses)}) ORDER BY created_at, id{lock}")
    return list(NotificationRecord.objects.raw(sql, params))


class _Candidates:
    """Records notifications may coalesce into, by agent, resource, thread, source and kind: those
    read from the database and those the batch creates."""

    def __init__(self, records: list[NotificationRecord]):
        self.by_thread: dict[tuple, list[NotificationRecord]] = {}
        for record in records:
            self.add(record)

    def add(self, record: NotificationRecord) -> None:
        key = (record.agent_id, record.resource_id, record.thread_id, record.source, record.kind)
        self.by_thread.setdefault(key, []).append(record)

    def oldest(self, call: dict, n: dict) -> NotificationRecord | None:
        """What ``_coalesce_target`` used to ask the database: the oldest pending record of the
        call's thread with the same source and kind and key, unclaimed or claimed by the call."""
        now, token = call["now"], call["token"]
        rows = self.by_thread.get((call["agent_id"], call["resource_id"], thread_key(call["resource_id"], call["thread_id"]),
                                   n["source"], n["kind"]))
        found = None
        for r in rows or ():
            if r.status != PENDING:
                continue
            if not ((n["dedupe_key"] and r.dedupe_key == n["dedupe_key"])
                    or (n["coalesce_key"] and r.coalesce_key == n["coalesce_key"])):
                continue
            if not (r.lock_token == "" or (r.locked_until is not None and r.locked_until < now)
                    or r.lock_token == token):
                continue
            if found is None or r.created_at < found.created_at:
                found = r
        return found


class _BatchWrites:
    """The rows a batch creates and changes, written at the end: one ``INSERT`` (executemany) of the
    new rows, one ``UPDATE`` (executemany) per set of changed columns. A changed row is written only
    in the columns whose value differs from what was read (``loaded``, locked since)."""

    def __init__(self, loaded: list[NotificationRecord]):
        self.created: list[NotificationRecord] = []
        self.changed: dict[str, tuple[NotificationRecord, set[str]]] = {}
        self.loaded = {record.id: {name: getattr(record, name) for name in _WRITABLE} for record in loaded}

    def change(self, record: NotificationRecord, names) -> None:
        if record._state.adding:
            return  # not inserted yet: the INSERT writes every field
        self.changed.setdefault(record.id, (record, set()))[1].update(names)

    def write(self) -> None:
        if self.created:
            NotificationRecord.objects.insert_instances(self.created)
        groups: dict[tuple, list[NotificationRecord]] = {}
        for record, names in self.changed.values():
            loaded = self.loaded.get(record.id)
            if loaded is not None:
                names = {name for name in names if name not in loaded or getattr(record, name) != loaded[name]}
            groups.setdefault(tuple(sorted(names)), []).append(record)
        for names, records in groups.items():
            if names:
                NotificationRecord.objects.update_instances(records, names)


def _ingest_call(call: dict, pool: _Candidates, states: dict, batch: _BatchWrites) -> dict:
    """One call of :func:`notifications_ingest_batch`: create or coalesce its notifications in
    memory (``batch`` writes them), then run its plan and apply the plan's updates."""
    token, now, locked_until = call["token"], call["now"], call["locked_until"]
    out: list[tuple[NotificationRecord, bool]] = []
    by_key: dict[tuple, NotificationRecord] = {}  # records of this call, by (source, kind, key kind, key)
    for n in call["notifications"]:
        keys = [("dedupe", n["dedupe_key"]), ("coalesce", n["coalesce_key"])]
        keys = [(kind, value) for kind, value in keys if value]
        record = next((by_key[(n["source"], n["kind"], *k)] for k in keys
                       if (n["source"], n["kind"], *k) in by_key), None)
        if record is None and keys:
            record = pool.oldest(call, n)
        if record is not None:
            _merge(record, n, token=token, locked_until=locked_until, now=now)
            batch.change(record, _MERGED)
            coalesced = True
        else:
            record = NotificationRecord(
                id=new_record_id(), agent_id=call["agent_id"], resource_id=call["resource_id"],
                thread_id=thread_key(call["resource_id"], call["thread_id"]), source=n["source"], source_id=n["source_id"], kind=n["kind"],
                priority=n["priority"], priority_rank=PRIORITY_RANK[n["priority"]], summary=n["summary"],
                payload=n["payload"], dedupe_key=n["dedupe_key"], coalesce_key=n["coalesce_key"],
                attributes=n["attributes"], metadata=n["metadata"], lock_token=token, locked_until=locked_until,
                created_at=now, updated_at=now)
            batch.created.append(record)
            if keys:
                pool.add(record)
            coalesced = False
        for k in keys:
            by_key.setdefault((n["source"], n["kind"], *k), record)
        out.append((record, coalesced))
    outcome: dict = {"records": [{**record.to_record(), "coalesced": coalesced} for record, coalesced in out]}
    key = call.get("thread_key")
    if key:
        outcome["thread"] = states.get(key)
        if call.get("plan") is not None:
            _apply_plan(call, outcome, {record.id: record for record, _ in out}, batch)
    return outcome


def _apply_plan(call: dict, outcome: dict, records: dict[str, NotificationRecord], batch: _BatchWrites) -> None:
    """Run ``call["plan"]`` on the call's ingested records and apply its updates to them in memory
    (as :func:`notifications_update` would: ``priority_rank`` follows ``priority``, ``updated_at``
    is now)."""
    try:
        planned = call["plan"](outcome["records"], outcome["thread"])
        updates = planned["updates"]
        for update in updates:
            unknown = set(update) - UPDATABLE - {"id"}
            if unknown:
                raise ValueError(f"cannot update notification field {sorted(unknown)[0]!r}")
            if update["id"] not in records:
                raise ValueError(f"a plan updated {update['id']!r}, not a record of its call")
    except Exception:
        logger.exception("notification plan failed; the call decides on its own")
        return
    stamp = timezone.now()
    for update in updates:
        record = records[update["id"]]
        names = {k for k in update if k != "id"} | {"updated_at"}
        for name in names - {"updated_at"}:
            setattr(record, name, update[name])
        if "priority" in names:
            record.priority_rank = PRIORITY_RANK[record.priority]
            names.add("priority_rank")
        record.updated_at = stamp
        batch.change(record, names)
    outcome["planned"] = planned


# The hot paths (every ingest writes one or two rows) build their SQL directly from the model's
# fields: on these one-row statements the ORM's query compilation costs more than the database does.
# Values go through each field's ``get_db_prep_save``, exactly as the ORM would send them.

def _update_claimed(ids: list[str], fields: dict, token: str | None) -> int:
    """``UPDATE … SET fields WHERE id IN ids [AND lock_token = token]``; returns the rows changed."""
    where = {"id": ids, **({"lock_token": token} if token is not None else {})}
    return NotificationRecord.objects.update_rows(where, fields)


def notifications_update(*, updates: list[dict], token: str) -> int:
    """Apply ``{"id", **fields}`` to each record still claimed by ``token`` (compare-and-set on
    ``lock_token``); returns how many rows changed. Updates with the same fields are written in one
    statement (``UPDATE … WHERE id IN …``), different ones in one executemany of a statement per row
    (Django's ``bulk_update`` builds a ``CASE`` per field over every row: most of a dispatch's time)."""
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
            statements.append(lambda objs=objs, names=names: NotificationRecord.objects.update_instances(
                objs, names, where={"lock_token": token}))
    if len(statements) == 1:
        return statements[0]()
    with transaction.atomic(savepoint=False):  # inside a group commit: no savepoint round trips
        return sum(statement() for statement in statements)


def _accepted(key: str, signal_id: str) -> str | None:
    """How the thread ``key`` took a signal whose send was interrupted: ``delivered``, ``persisted``
    or None."""
    if ThreadInput.objects.filter(thread_id=key, input_id=signal_id).exists():
        return "delivered"
    if Message.objects.filter(thread_id=key, message_id=signal_id).exists():
        return "persisted"
    return None


def _settle_interrupted(record: NotificationRecord, now: datetime) -> bool:
    """A claim expired while its signal was being sent. When the thread accepted the signal, record
    that (it is never sent again) and return True; otherwise forget the attempt (it is retried)."""
    signal_id, kind = record.attempt_signal_id, record.attempt_kind
    record.attempt_signal_id, record.attempt_kind = None, ""
    accepted = _accepted(record.thread_id, signal_id)
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
            row["thread_id"] = thread_id_of(row["thread_id"])  # the column holds the thread's key
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


def notifications_read(*, ids: list[str], signal_ids: dict[str, str], now: datetime | None = None) -> dict[str, str]:
    """The inbox tool read records (one transaction). A pending, unclaimed record whose id is in
    ``signal_ids`` is marked seen with that id as the signal that carries it (the caller injects it):
    ``"inject"``. A delivered record (or a pending one already carried by a signal) is just marked
    seen: ``"seen"``. Any other record is left as it is and missing from the result.

    Returns ``{record_id: "inject" | "seen"}``."""
    now = now or timezone.now()
    seen = {"status": NotificationRecord.Status.SEEN, "seen_at": now, "next_due_at": None, "updated_at": now}
    carried = Q(status=NotificationRecord.Status.DELIVERED) | Q(status=PENDING, delivered_signal_id__isnull=False)
    outcome: dict[str, str] = {}
    with transaction.atomic():
        for record_id in ids:
            signal_id = signal_ids.get(record_id)
            if signal_id and NotificationRecord.objects.filter(
                    _unclaimed(now), pk=record_id, status=PENDING, delivered_signal_id__isnull=True).update(
                    delivered_signal_id=signal_id, **seen):
                outcome[record_id] = "inject"
            elif NotificationRecord.objects.filter(carried, pk=record_id).update(**seen):
                outcome[record_id] = "seen"
    return outcome


def notifications_deliver_now(*, ids: list[str], now: datetime | None = None) -> int:
    """Make pending (or failed) records due for a full delivery at the next dispatch, even into an
    active run; a failed record gets a fresh set of attempts."""
    now = now or timezone.now()
    return NotificationRecord.objects.filter(pk__in=list(ids), status__in=["pending", "failed"]).update(
        status=PENDING, deliver_at=now, next_due_at=now, deliver_when_idle=False, delivery_attempts=0,
        delivery_reason="delivered now by an operator", updated_at=now)
