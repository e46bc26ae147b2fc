"""OpenTelemetry export of finished spans over OTLP/HTTP, off unless ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set; the ``opentelemetry`` SDK reads its usual
variables (headers, timeout, ``OTEL_SERVICE_NAME``). Ids keep their values: a span exported here has
the trace id and span id of ``result.trace_id`` / the stored span. Spans leave through the SDK's
``BatchSpanProcessor`` (its bounded queue, batches on an interval and on size, a flush at exit): the
run that ends only queues them, the HTTP calls happen on the processor's thread."""

from __future__ import annotations

import atexit
import json
import os
from datetime import datetime
from typing import Any

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def _ns(stamp: str | None) -> int | None:
    return int(datetime.fromisoformat(stamp).timestamp() * 1_000_000_000) if stamp else None


def _attribute(value: Any) -> Any:
    """An OpenTelemetry attribute value: primitives as they are, anything else as JSON text."""
    if isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, default=str)


class OtelExporter:
    """Sends a run's spans (``agents.runtime.tracing`` dicts) to an OTLP/HTTP collector."""

    def __init__(self, *, endpoint: str | None = None, service_name: str | None = None):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource

        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self._exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
        self._processor = BatchSpanProcessor(self._exporter)
        atexit.register(self.shutdown)
        self._resource = Resource.create({"service.name": service_name or os.environ.get("OTEL_SERVICE_NAME")
                                          or "mastra-django"})

    def readable(self, span: dict) -> Any:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        trace_id = int(span["trace_id"], 16)
        flags = TraceFlags(TraceFlags.SAMPLED)
        parent = (SpanContext(trace_id=trace_id, span_id=int(span["parent_span_id"], 16), is_remote=False,
                              trace_flags=flags) if span.get("parent_span_id") else None)
        attributes = {"mastra.span.type": span["type"]}
        attributes.update({f"mastra.{k}": _attribute(v) for k, v in span["attributes"].items() if v is not None})
        attributes.update({f"mastra.metadata.{k}": _attribute(v) for k, v in span["metadata"].items()
                           if v is not None})
        for key in ("input", "output"):
            if span.get(key) is not None:
                attributes[f"mastra.{key}"] = _attribute(span[key])
        error = span.get("error")
        status = Status(StatusCode.ERROR, error["message"]) if error else Status(StatusCode.OK)
        return ReadableSpan(name=span["name"], context=SpanContext(trace_id=trace_id, span_id=int(span["span_id"], 16),
                                                                   is_remote=False, trace_flags=flags),
                            parent=parent, resource=self._resource, attributes=attributes, kind=SpanKind.INTERNAL,
                            start_time=_ns(span["started_at"]), end_time=_ns(span.get("ended_at")), status=status)

    def export(self, spans: list[dict]) -> None:
        """Queue ``spans`` on the batch processor (no I/O here: its thread sends them)."""
        for span in spans:
            self._processor.on_end(self.readable(span))

    def flush(self, timeout_ms: int = 30_000) -> bool:
        return self._processor.force_flush(timeout_ms)

    def shutdown(self) -> None:
        """Send what is queued, then stop (the processor shuts its exporter down)."""
        self._processor.shutdown()


def otel_exporter_from_env() -> OtelExporter | None:
    """An :class:`OtelExporter` when an OTLP endpoint variable is set, else None (the default)."""
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return None
    return OtelExporter()


__all__ = ["ENDPOINT_VARIABLES", "OtelExporter", "otel_exporter_from_env"]
