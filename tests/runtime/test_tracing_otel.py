"""OpenTelemetry export: off by default, and with OTEL_EXPORTER_OTLP_ENDPOINT the spans of a run
reach an OTLP/HTTP collector with their ids and parent links."""

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agents.runtime import Agent, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from agents.runtime.tracing import add_trace_exporter, remove_trace_exporter
from agents.runtime.tracing.otel import otel_exporter_from_env


@pytest.fixture
def collector():
    """An OTLP/HTTP collector on a free local port: the trace requests it received."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", received
    server.shutdown()


def test_no_exporter_without_an_endpoint(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert otel_exporter_from_env() is None


@pytest.mark.asyncio
async def test_spans_reach_the_collector_with_their_ids(monkeypatch, collector):
    url, received = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    exporter = add_trace_exporter(otel_exporter_from_env())
    try:
        ping = create_tool(id="ping", execute=lambda i: "pong")
        model = ScriptedModel([tool_step(("c1", "ping", {})), text_step("done")])
        result = await Agent(id="a", instructions="x", model=model, tools={"ping": ping}).generate(
            "hi", tracing_options={"metadata": {"team": "ops"}})
    finally:
        remove_trace_exporter(exporter)
        exporter.shutdown()
    assert [path for path, _ in received] == ["/v1/traces"]
    request = ExportTraceServiceRequest()
    request.ParseFromString(received[0][1])
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert [s.name for s in spans] == ["agent run: 'a'", "step: 0", "tool: 'ping'", "step: 1"]
    assert {s.trace_id.hex() for s in spans} == {result.trace_id}
    root = spans[0]
    assert (root.span_id.hex(), root.parent_span_id) == (result.span_id, b"")
    assert all(s.parent_span_id.hex() == result.span_id for s in spans[1:])
    attributes = {a.key: a.value.string_value for a in root.attributes}
    assert (attributes["mastra.span.type"], attributes["mastra.metadata.team"]) == ("agent_run", "ops")
    service = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}["service.name"]
    assert service == "mastra-django"
