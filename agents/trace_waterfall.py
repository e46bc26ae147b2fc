"""A run's trace laid out on a time axis (the run's admin page): each span a row, under its parent,
with its offset and width as percentages of the trace's duration; and the run's token usage per
step. Pure reads of stored spans (``agents.observability``); the admin renders the rows as HTML and
CSS (``admin/agents/run/waterfall.html``), each row a ``<details>`` with the span's stored input and
output."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agents.observability import TraceSpan

#: the longest JSON shown for a span's input, output or attributes (characters)
MAX_JSON_CHARS = 20_000
#: the narrowest bar, so that a span of 0 ms stays visible (percent of the axis)
MIN_WIDTH_PCT = 0.4
#: the usage fields shown, in order, with their labels
USAGE_COLUMNS = (("input_tokens", "input"), ("output_tokens", "output"), ("reasoning_tokens", "reasoning"),
                 ("cached_input_tokens", "cached input"), ("total_tokens", "total"))


def json_text(value: Any, limit: int = MAX_JSON_CHARS) -> str:
    """``value`` as indented JSON, clipped past ``limit`` characters with a note of what was left."""
    if value is None:
        return ""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit} more characters)"


@dataclass(frozen=True)
class WaterfallRow:
    span: TraceSpan
    depth: int
    offset_pct: float
    width_pct: float
    duration_ms: int | None
    input: str
    output: str
    attributes: str
    error: str

    @property
    def indent_em(self) -> float:
        return round(self.depth * 1.2, 1)


@dataclass(frozen=True)
class Waterfall:
    trace_id: str
    total_ms: int
    rows: tuple[WaterfallRow, ...]
    #: the axis' marks: ``(percent, label)``
    ticks: tuple[tuple[float, str], ...]


def span_end(span: TraceSpan) -> datetime:
    if span.ended_at is not None:
        return span.ended_at
    return span.started_at + timedelta(milliseconds=span.duration_ms or 0)


def tree_order(spans: list[TraceSpan]) -> list[tuple[TraceSpan, int]]:
    """``(span, depth)`` depth first: each span after its parent, siblings by start time. A span
    whose parent is not stored (a sub-agent's trace seen from the sub-agent) is a root."""
    ids = {s.span_id for s in spans}
    children: dict[str, list[TraceSpan]] = {}
    roots = []
    for span in sorted(spans, key=lambda s: (s.started_at, s.pk or 0)):
        if span.parent_span_id and span.parent_span_id in ids and span.parent_span_id != span.span_id:
            children.setdefault(span.parent_span_id, []).append(span)
        else:
            roots.append(span)
    out: list[tuple[TraceSpan, int]] = []
    seen: set[str] = set()

    def visit(span: TraceSpan, depth: int) -> None:
        if span.span_id in seen:  # a cycle of parent ids in stored data: shown once
            return
        seen.add(span.span_id)
        out.append((span, depth))
        for child in children.get(span.span_id, []):
            visit(child, depth + 1)

    for root in roots:
        visit(root, 0)
    return out


def duration_label(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def waterfall_build(spans: list[TraceSpan]) -> Waterfall | None:
    """The waterfall of ``spans`` (one or more traces of a run), or None without spans."""
    if not spans:
        return None
    start = min(s.started_at for s in spans)
    end = max(span_end(s) for s in spans)
    total_ms = max(int((end - start).total_seconds() * 1000), 1)
    rows = []
    for span, depth in tree_order(spans):
        offset = (span.started_at - start).total_seconds() * 1000 / total_ms * 100
        width = (span_end(span) - span.started_at).total_seconds() * 1000 / total_ms * 100
        offset = min(max(offset, 0.0), 100.0 - MIN_WIDTH_PCT)
        width = min(max(width, MIN_WIDTH_PCT), 100.0 - offset)
        error = span.error or {}
        rows.append(WaterfallRow(
            span=span, depth=depth, offset_pct=round(offset, 3), width_pct=round(width, 3),
            duration_ms=span.duration_ms, input=json_text(span.input), output=json_text(span.output),
            attributes=json_text(span.attributes or None),
            error=f"{error.get('code') or 'error'}: {error.get('message') or ''}" if error else ""))
    ticks = tuple((pct, duration_label(total_ms * pct / 100)) for pct in (0.0, 25.0, 50.0, 75.0, 100.0))
    return Waterfall(trace_id=spans[0].trace_id, total_ms=total_ms, rows=tuple(rows), ticks=ticks)


@dataclass(frozen=True)
class StepUsage:
    step: str
    model: str
    finish_reason: str
    tokens: tuple[int | None, ...]  # in :data:`USAGE_COLUMNS` order


def usage_rows(*, run_id: str, usage: dict, spans: list[TraceSpan]) -> tuple[list[StepUsage], tuple]:
    """The run's tokens per model step (from its ``model_step`` spans, in order) and its totals
    (the run's stored ``usage``), each in :data:`USAGE_COLUMNS` order."""
    steps = []
    for span in spans:
        if span.type != "model_step" or span.run_id != run_id:
            continue
        attributes = span.attributes or {}
        step_usage = attributes.get("usage") or {}
        model = "/".join(str(attributes[k]) for k in ("provider", "model_id") if attributes.get(k))
        steps.append(StepUsage(step=span.name, model=model, finish_reason=str(attributes.get("finish_reason") or ""),
                               tokens=tuple(step_usage.get(key) for key, _ in USAGE_COLUMNS)))
    totals = tuple((usage or {}).get(key) for key, _ in USAGE_COLUMNS)
    return steps, totals


__all__ = ["MAX_JSON_CHARS", "StepUsage", "USAGE_COLUMNS", "Waterfall", "WaterfallRow", "json_text", "tree_order",
           "usage_rows", "waterfall_build"]
