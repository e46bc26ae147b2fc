"""Tracing of runs: ``spans`` (ids, spans, options), ``exporters`` (store and exporters)."""

from .exporters import add_trace_exporter, remove_trace_exporter, spans_export
from .spans import (Span, Trace, dotted, new_span_id, new_trace_id, run_span_open, tracing_context_check,
                    tracing_options_check)

__all__ = ["Span", "Trace", "add_trace_exporter", "dotted", "new_span_id", "new_trace_id", "remove_trace_exporter",
           "run_span_open", "spans_export", "tracing_context_check", "tracing_options_check"]
