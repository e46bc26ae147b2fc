"""Writes and reads of scores and trace spans (the run store's ``save_score`` / ``save_spans``)."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agents.connections import async_twin
from agents.observability import Score, TraceSpan


def _json(value: Any) -> Any:
    """``value`` as plain JSON data (anything else becomes its string form)."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None


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


def spans_save(*, spans: list[dict]) -> int:
    """Store a trace's finished spans in one transaction; each span gets the run id of its nearest
    ``agent_run`` span. Returns how many were stored."""
    by_id = {s["span_id"]: s for s in spans}

    def run_of(span: dict) -> str:
        seen = set()
        while span is not None and span["span_id"] not in seen:
            seen.add(span["span_id"])
            if span["type"] == "agent_run":
                return span["attributes"].get("run_id") or ""
            span = by_id.get(span.get("parent_span_id"))
        return ""

    rows = [TraceSpan(trace_id=s["trace_id"], span_id=s["span_id"], parent_span_id=s.get("parent_span_id") or "",
                      run_id=run_of(s), name=s["name"][:255], type=s["type"][:32], attributes=_json(s["attributes"]),
                      metadata=_json(s["metadata"]), input=_json(s.get("input")), output=_json(s.get("output")),
                      error=_json(s.get("error")), started_at=_time(s["started_at"]),
                      ended_at=_time(s.get("ended_at")), duration_ms=s.get("duration_ms"))
            for s in spans]
    with transaction.atomic():
        TraceSpan.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def run_scores(*, run_id: str) -> list[Score]:
    return list(Score.objects.filter(run_id=run_id).order_by("created_at", "id"))


def run_spans(*, run_id: str) -> list[TraceSpan]:
    """The spans of the trace(s) the run took part in, in start order."""
    traces = TraceSpan.objects.filter(run_id=run_id).values_list("trace_id", flat=True).distinct()
    return list(TraceSpan.objects.filter(trace_id__in=list(traces)).order_by("started_at", "id"))


ascore_save = async_twin(score_save)
aspans_save = async_twin(spans_save)

__all__ = ["ascore_save", "aspans_save", "run_scores", "run_spans", "score_save", "spans_save"]
