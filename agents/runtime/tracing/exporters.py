"""Where finished traces go: the run store (``save_spans``, when it has one) and the exporters
registered with :func:`add_trace_exporter` (each an object with ``export(spans: list[dict])``,
sync or async). A run's spans are exported once, when the run that opened the trace ends; a trace
whose options say ``export=False`` (``telemetry={"is_enabled": False}``) goes to the store only.

A store that queues traces for a background writer (the site's, ``queue_spans``) takes the
``Span`` objects themselves: their rows are made on the writer's thread, so that a run with no
exporter registered makes no record (``Span.to_dict``) on its path."""

from __future__ import annotations

import inspect
import logging
from typing import Any

from .spans import Span

logger = logging.getLogger(__name__)

_exporters: list[Any] = []


def add_trace_exporter(exporter: Any) -> Any:
    """Send every finished run's spans to ``exporter`` (returns it, to remove it later)."""
    _exporters.append(exporter)
    return exporter


def remove_trace_exporter(exporter: Any) -> None:
    if exporter in _exporters:
        _exporters.remove(exporter)


async def spans_export(spans: list[Span], store: Any, *, export: bool = True) -> None:
    """Store and export a run's finished spans; never raises (a failing exporter is logged)."""
    trace_id = spans[0].trace_id if spans else None
    queue = getattr(store, "queue_spans", None)
    try:
        queued = queue is not None and queue(spans)
    except Exception:
        queued = False
        logger.exception("queueing the spans of trace %s failed", trace_id)
    save = None if queued else getattr(store, "save_spans", None)
    targets = ([save] if save is not None else []) + ([e.export for e in list(_exporters)] if export else [])
    if not targets:
        return
    records = [s.to_dict() for s in spans]
    for target in targets:
        try:
            value = target(records)
            if inspect.isawaitable(value):
                await value
        except Exception:
            logger.exception("exporting the spans of trace %s failed", trace_id)


__all__ = ["add_trace_exporter", "remove_trace_exporter", "spans_export"]
