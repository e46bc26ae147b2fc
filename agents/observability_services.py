"""Writes and reads of scores and trace spans (the run store's ``save_score`` / ``save_spans``).

Trace spans are bookkeeping: with ``MASTRA_TRACE_BATCH`` on (the default) the run store only queues
a finished trace on the process's :func:`spans_writer` (an ``agents.batch_writer.BatchWriter``,
no I/O on the caller's path) and the writer's thread stores the queued traces in batches, on a
connection of its own: every ``MASTRA_TRACE_INTERVAL_MS``, at once when ``MASTRA_TRACE_BATCH_SIZE``
traces wait, and at a clean exit. A full queue (``MASTRA_TRACE_QUEUE`` traces) drops the new trace
and counts it (``spans_writer().stats()``, on the dashboard). Off, each run's end stores its spans
itself (:func:`aspans_save`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone as dt_timezone
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agents import sql
from agents.batch_writer import BatchWriter, ProcessWriter
from agents.connections import async_twin, connection_checked
from agents.json_text import text_encoder
from agents.observability import Score, TraceSpan


def _json(value: Any) -> Any:
    """``value`` as plain JSON data (anything else becomes its string form)."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None


#: ``json.dumps(value, default=str)``, from an encoder built once
_encode = text_encoder()


def _json_text(value: Any) -> sql.JsonText | None:
    """``value`` encoded once for :func:`agents.sql.insert` (anything not JSON becomes its string form)."""
    return sql.JsonText(_encode(value)) if value is not None else None


def _time(value: str | None):
    return parse_datetime(value) if value else None


def score_save(*, score: dict) -> Score:
    """Store one scorer's result (``agents.runtime.scoring.live``)."""
    return Score.objects.create(
        score_id=score["id"], run_id=score["run_id"], agent_id=score.get("agent_id") or "",
        thread_id=score.get("thread_id") or "", resource_id=score.get("resource_id") or "",
        scorer_key=score["scorer_key"], scorer_id=score["scorer_id"], scorer_name=score.get("scorer_name") or "",
        score=score.get("score"), reason=score.get("reason") or "", error=score.get("error") or "",
        input=_json(score.get("input")), output=_json(score.get("output")),
        preprocess_result=_json(score.get("preprocess_result")), analyze_result=_json(score.get("analyze_result")),
        created_at=_time(score.get("created_at")) or timezone.now())


def span_rows(spans: list) -> list[dict]:
    """The rows (``{field: value}``, JSON fields encoded once: :class:`agents.sql.JsonText`) of one
    trace's finished spans (records, or the runtime's ``Span`` objects a run store queued), for
    :func:`agents.sql.insert`; each span gets the run id of its nearest ``agent_run`` span."""
    spans = [s if isinstance(s, dict) else _record(s) for s in spans]
    by_id = {s["span_id"]: s for s in spans}

    def run_of(span: dict) -> str:
        seen = set()
        while span is not None and span["span_id"] not in seen:
            seen.add(span["span_id"])
            if span["type"] == "agent_run":
                return span["attributes"].get("run_id") or ""
            span = by_id.get(span.get("parent_span_id"))
        return ""

    return [dict(trace_id=s["trace_id"], span_id=s["span_id"], parent_span_id=s.get("parent_span_id") or "",
                 run_id=run_of(s), name=s["name"][:255], type=s["type"][:32],
                 attributes=_json_text(s["attributes"]), metadata=_json_text(s["metadata"]),
                 input=_json_text(s.get("input")), output=_json_text(s.get("output")),
                 error=_json_text(s.get("error")), started_at=_at(s["started_at"]),
                 ended_at=_at(s.get("ended_at")), duration_ms=s.get("duration_ms"))
            for s in spans]


def _record(span) -> dict:
    """A runtime ``Span``'s record as :meth:`Span.to_dict` gives it, but its times as aware UTC
    datetimes (the values the columns take) rather than their ISO text."""
    ended = span.ended
    return {"trace_id": span.trace_id, "span_id": span.span_id, "parent_span_id": span.parent_span_id,
            "name": span.name, "type": span.type, "attributes": span.attributes, "metadata": span.metadata,
            "input": span.input, "output": span.output, "error": span.error,
            "started_at": datetime.fromtimestamp(span.started, dt_timezone.utc),
            "ended_at": datetime.fromtimestamp(ended, dt_timezone.utc) if ended is not None else None,
            "duration_ms": int((ended - span.started) * 1000) if ended is not None else None}


def _at(value):
    """A span record's time (ISO text, or already a datetime) as the column takes it."""
    return value if value is None or isinstance(value, datetime) else parse_datetime(value)


def spans_save(*, spans: list[dict]) -> int:
    """Store a trace's finished spans in one transaction. Returns how many were stored."""
    return traces_save([spans])


def traces_save(traces: list[list[dict]]) -> int:
    """Store the finished spans of ``traces`` (one list of spans each) in one transaction; a span
    stored before (same trace and span id) is left as it is. Returns how many were given."""
    rows = [row for spans in traces for row in span_rows(spans)]
    with transaction.atomic():
        for start in range(0, len(rows), 1000):
            sql.insert(TraceSpan, rows[start:start + 1000], ignore_conflicts=True)
    return len(rows)


def traces_save_on_own_connection(traces: list[list[dict]]) -> int:
    """:func:`traces_save` from the writer's thread, on a connection of its own: kept while batches
    follow one another (checked first: :func:`agents.connections.connection_checked`), closed when
    the writer goes idle (``on_idle``) and after a failed batch."""
    connection_checked()
    try:
        return traces_save(traces)
    except BaseException:
        connections.close_all()  # this thread's connections only
        raise


_writer = ProcessWriter(lambda: BatchWriter(
    "trace-spans", traces_save_on_own_connection, max_queue=settings.MASTRA_TRACE_QUEUE,
    max_batch=settings.MASTRA_TRACE_BATCH_SIZE, interval_s=settings.MASTRA_TRACE_INTERVAL_MS / 1000.0,
    on_idle=connections.close_all))


def spans_writer() -> BatchWriter:
    """The process's trace writer (made on first use)."""
    return _writer.get()


def spans_writer_shutdown(**kwargs) -> None:
    """Store what the trace writer holds and stop it (a Celery worker process ending)."""
    _writer.shutdown()


def spans_submit(spans: list) -> bool:
    """Queue one finished trace (its span records, or its ``Span`` objects: the writer's thread
    makes their records) for :func:`spans_writer` (no I/O); False when it was dropped."""
    return spans_writer().submit(spans)


def run_scores(*, run_id: str) -> list[Score]:
    return list(Score.objects.filter(run_id=run_id).order_by("created_at", "id"))


def run_spans(*, run_id: str) -> list[TraceSpan]:
    """The spans of the trace(s) the run took part in, in start order."""
    traces = TraceSpan.objects.filter(run_id=run_id).values_list("trace_id", flat=True).distinct()
    return list(TraceSpan.objects.filter(trace_id__in=list(traces)).order_by("started_at", "id"))


ascore_save = async_twin(score_save)
aspans_save = async_twin(spans_save)

__all__ = ["ascore_save", "aspans_save", "run_scores", "run_spans", "score_save", "span_rows", "spans_save",
           "spans_submit", "spans_writer", "spans_writer_shutdown", "traces_save"]
