"""Active-run slots: at most N active runs per resource and per agent (docs/operations.md).

A run takes its slot before its first model call (:func:`slot_take`) and gives it back when it ends
(:func:`slot_release`). Taking one counts the scope's live slots and inserts the run's in one
transaction, serialised per scope: a transaction-scoped advisory lock per scope on PostgreSQL
(``pg_advisory_xact_lock``, taken in key order), the database's write lock on SQLite (``BEGIN
IMMEDIATE``). A slot lives ``MASTRA_ACTIVE_RUN_TTL_S`` past the run's last model call, so that a
process that died holding it frees it by itself.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from django.db import connection, transaction

from agents.runtime.budgets import RunScope
from agents.runtime.errors import TooManyActiveRunsError

from .models import ActiveRunSlot


def _lock_id(kind: str, value: str) -> int:
    digest = hashlib.blake2b(f"mastra-active-runs|{kind}|{value}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def limits_for(scope: RunScope, *, per_resource: int, per_agent: int) -> list[tuple[str, str, int]]:
    """``(field, value, limit)`` of the limits that apply to ``scope`` (0: off)."""
    found = []
    if per_resource and scope.resource_id:
        found.append(("resource_id", scope.resource_id, per_resource))
    if per_agent and scope.agent_id:
        found.append(("agent_id", scope.agent_id, per_agent))
    return found


def slots_refusal(*, scope: RunScope, limits: list[tuple[str, str, int]], now: datetime) -> TooManyActiveRunsError | None:
    """The refusal a run of ``scope`` would meet now (the other runs' live slots fill a limit)."""
    for field, value, limit in limits:
        active = ActiveRunSlot.objects.filter(**{field: value}, expires_at__gt=now).exclude(run_id=scope.run_id).count()
        if active >= limit:
            kind = field.removesuffix("_id")
            return TooManyActiveRunsError(
                f"{kind} {value!r} already has {active} active run(s), its limit; send again when one ends",
                details={"scope": kind, "limit": limit, "active": active})
    return None


def slot_take(*, scope: RunScope, limits: list[tuple[str, str, int]], now: datetime, ttl_s: int) -> None:
    """Give ``scope``'s run a slot (or push its live one on); raises :class:`TooManyActiveRunsError`
    when a limit is full."""
    expires = now + timedelta(seconds=ttl_s)
    if ActiveRunSlot.objects.filter(run_id=scope.run_id, expires_at__gt=now).update(expires_at=expires):
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                for lock in sorted(_lock_id(field, value) for field, value, _ in limits):
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock])
        refused = slots_refusal(scope=scope, limits=limits, now=now)
        if refused is not None:
            raise refused
        ActiveRunSlot.objects.update_or_create(run_id=scope.run_id, defaults={
            "resource_id": scope.resource_id, "agent_id": scope.agent_id, "acquired_at": now, "expires_at": expires})


def slot_release(*, run_id: str) -> None:
    ActiveRunSlot.objects.filter(run_id=run_id).delete()


__all__ = ["limits_for", "slot_release", "slot_take", "slots_refusal"]
