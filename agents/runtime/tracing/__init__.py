"""Tracing of runs: ``spans`` (ids, spans, options), ``exporters`` (store and exporters), ``steps``
(each answered model step as a record, for the cost ledger)."""

from .exporters import add_trace_exporter, remove_trace_exporter, spans_export
from .steps import (CHANNEL_KEY, CHANNELS, add_step_observer, if_idle_with_channel, remove_step_observer,
                    step_observed, with_channel)
from .spans import (Span, Trace, dotted, new_span_id, new_trace_id, run_span_open, tracing_context_check,
                    tracing_options_check)

__all__ = ["CHANNELS", "CHANNEL_KEY", "Span", "Trace", "add_step_observer", "add_trace_exporter", "dotted", "new_span_id", "new_trace_id", "remove_trace_exporter",
           "if_idle_with_channel", "remove_step_observer", "run_span_open", "spans_export", "step_observed", "tracing_context_check", "tracing_options_check", "with_channel"]
