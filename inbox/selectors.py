"""Reads of the notification inbox."""

from __future__ import annotations

from django.db.models import Count, Q

from agents.runtime.threads.store import thread_key

from .models import NotificationRecord


def _thread_rows(*, resource_id: str | None, thread_id: str | None):
    rows = NotificationRecord.objects.all()
    if resource_id is not None:
        rows = rows.filter(resource_id=resource_id)
    if thread_id is not None:
        rows = rows.filter(thread_id=thread_key(resource_id, thread_id)) if resource_id is not None else \
            rows.filter(thread__thread_id=thread_id)
    return rows


def notification_list(*, resource_id: str | None, thread_id: str | None, status: str | list[str] | None = None,
                      priority: str | None = None, source: str | None = None, query: str | None = None,
                      limit: int = 20, offset: int = 0) -> tuple[list[dict], int]:
    """Records of a thread (or of a resource), newest first, filtered (``status``: one or a list);
    returns (records, total); ``offset`` skips that many records first."""
    rows = _thread_rows(resource_id=resource_id, thread_id=thread_id)
    if isinstance(status, list):
        rows = rows.filter(status__in=status)
    elif status:
        rows = rows.filter(status=status)
    if priority:
        rows = rows.filter(priority=priority)
    if source:
        rows = rows.filter(source=source)
    if query:
        rows = rows.filter(Q(summary__icontains_folded=query) | Q(source__icontains=query) | Q(kind__icontains=query))
    total = rows.count()
    return [r.to_record() for r in rows.order_by("-created_at", "-id")[offset:offset + limit]], total


def notification_counts(*, resource_id: str | None, thread_id: str | None) -> dict[str, int]:
    """``{status: count}`` of a thread's (or a resource's) inbox."""
    rows = _thread_rows(resource_id=resource_id, thread_id=thread_id)
    return {row["status"]: row["n"] for row in rows.values("status").annotate(n=Count("id")).order_by("status")}


def notification_get(*, record_id: str, resource_id: str | None = None) -> dict | None:
    rows = NotificationRecord.objects.filter(pk=record_id)
    if resource_id is not None:
        rows = rows.filter(resource_id=resource_id)
    row = rows.first()
    return row.to_record() if row else None


def records_by_id(ids: list[str]) -> dict[str, dict]:
    """``{id: record}`` of the records ``ids`` that exist (as stored)."""
    return {row.id: row.to_record() for row in NotificationRecord.objects.filter(pk__in=list(ids))}
