"""Trace spans are stored off the caller's path (``MASTRA_TRACE_BATCH``, on in production; the test
settings turn it off, these transactional tests turn it on): a ``generate`` without memory does no
database work and no thread hop, its trace is queued, and the writer's thread stores every queued
trace: on a flush, and at a clean exit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from agents import observability_services
from agents.observability import TraceSpan
from agents.observability_services import spans_writer
from agents.runtime import Agent, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from agents.runtime.tracing import Span, add_trace_exporter, remove_trace_exporter
from tests.writers import connections_opened, held_one_at_a_time

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def batched(settings):
    settings.MASTRA_TRACE_BATCH = True
    yield spans_writer()
    assert spans_writer().flush(timeout=10)  # nothing queued outlives the test's tables


def test_a_generate_without_memory_does_no_database_work_and_no_thread_hop(batched, hops, django_db_blocker):
    agent = Agent(id="plain", instructions="x", model=ScriptedModel([text_step("hello")]))
    with django_db_blocker.block():  # any query here raises
        result = asyncio.run(agent.generate("hi"))
    assert (result.text, hops) == ("hello", [])
    assert TraceSpan.objects.count() == 0  # queued, not stored yet
    assert batched.flush(timeout=10)
    stored = list(TraceSpan.objects.order_by("started_at", "id").values_list("trace_id", "type", "run_id"))
    assert stored == [(result.trace_id, "agent_run", result.run_id), (result.trace_id, "model_step", result.run_id)]


def test_the_span_records_are_made_on_the_writers_thread_unless_an_exporter_needs_them(batched, monkeypatch):
    """The run queues its ``Span`` objects; their records (the store's rows, ``_record``) are made
    by the writer's thread. A registered exporter gets them made (``to_dict``) on the run's path,
    and the store the same trace."""
    made_on: list[str] = []
    to_dict = Span.to_dict
    record = observability_services._record

    def recording(span):
        made_on.append(threading.current_thread().name)
        return to_dict(span)

    def recording_row(span):
        made_on.append(threading.current_thread().name)
        return record(span)

    monkeypatch.setattr(Span, "to_dict", recording)
    monkeypatch.setattr(observability_services, "_record", recording_row)
    agent = Agent(id="plain", instructions="x", model=ScriptedModel([text_step("one"), text_step("two")]))
    first = asyncio.run(agent.generate("hi"))
    assert made_on == []  # nothing made on the run's path
    assert batched.flush(timeout=10)
    assert made_on == ["batch-writer-trace-spans"] * 2

    class Exporter:
        def __init__(self):
            self.traces = []

        def export(self, spans):
            self.traces.append(spans)

    exporter = add_trace_exporter(Exporter())
    try:
        made_on.clear()
        second = asyncio.run(agent.generate("hi"))
    finally:
        remove_trace_exporter(exporter)
    assert made_on == [threading.current_thread().name] * 2
    assert [[(s["trace_id"], s["type"]) for s in spans] for spans in exporter.traces] == [
        [(second.trace_id, "agent_run"), (second.trace_id, "model_step")]]
    assert batched.flush(timeout=10)
    stored = list(TraceSpan.objects.order_by("started_at", "id").values_list("trace_id", "type", "output"))
    assert stored == [
        (first.trace_id, "agent_run", "one"), (first.trace_id, "model_step", {"text": "one", "tool_calls": []}),
        (second.trace_id, "agent_run", "two"), (second.trace_id, "model_step", {"text": "two", "tool_calls": []})]


def test_a_quick_tool_loop_without_memory_stays_on_the_event_loop(batched, hops, django_db_blocker):
    ping = create_tool(id="ping", execute=lambda i: "pong", quick=True)
    model = ScriptedModel([tool_step(("c1", "ping", {})), tool_step(("c2", "ping", {})), text_step("done")])
    agent = Agent(id="looping", instructions="x", model=model, tools={"ping": ping})
    with django_db_blocker.block():
        result = asyncio.run(agent.generate("hi"))
    assert (result.text, [r["payload"]["result"] for r in result.tool_results], hops) == ("done", ["pong", "pong"], [])


def test_traces_queued_before_a_clean_exit_are_all_stored(db_url_for_subprocess):
    """A process runs 300 generates and exits without a flush: the writer's ``atexit`` handler
    stores every queued trace (the interval is ten minutes: nothing was written before the exit)."""
    script = textwrap.dedent("""
        import asyncio, django
        django.setup()
        from agents.runtime import Agent
        from agents.runtime.testing import ScriptedModel, text_step

        async def main():
            agent = Agent(id="exiting", instructions="x", model=ScriptedModel([text_step("ok")] * 300))
            for _ in range(300):
                await agent.generate("hi")

        asyncio.run(main())
    """)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
           "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DATABASE_URL": db_url_for_subprocess,
           "PYTHONPATH": str(ROOT), "MASTRA_TRACE_BATCH": "true", "MASTRA_TRACE_INTERVAL_MS": "600000",
           "MASTRA_TRACE_BATCH_SIZE": "10000", "MASTRA_LEDGER": "false"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert TraceSpan.objects.filter(type="agent_run").values("trace_id").distinct().count() == 300
    assert TraceSpan.objects.count() == 600


def test_the_rows_of_span_objects_are_the_rows_of_their_records():
    """The writer's thread makes a queued ``Span``'s row without its ISO text (``_record``); the
    row is the one its ``to_dict`` record gives, times to the microsecond included."""
    from agents.runtime.tracing.spans import Trace

    trace = Trace()
    root = Span(trace, name="agent run: 'x'", type="agent_run", attributes={"run_id": "r1"}, input=[{"a": 1}])
    child = root.create_child_span(name="step: 0", type="model_step", metadata={"m": [1, 2]})
    tool = child.create_child_span(name="tool: t", type="tool_call")
    child.end(output={"text": "hi"})
    tool.end(error=ValueError("bad"))
    root.end(output="hi")
    for span, started, ended in ((root, 1796388410.9999995, 1796388411.25), (child, 1796388410.0000005, None),
                                 (tool, 1798761599.9999996, 1798761600.0000004)):
        span.started, span.ended = started, ended
    rows = observability_services.span_rows(trace.spans)
    assert rows == observability_services.span_rows([s.to_dict() for s in trace.spans])
    assert [r["run_id"] for r in rows] == ["r1"] * 3
    assert [(r["started_at"].isoformat(), r["ended_at"] and r["ended_at"].isoformat(), r["duration_ms"])
            for r in rows] == [("2026-12-04T12:46:51+00:00", "2026-12-04T12:46:51.250000+00:00", 250),
                               ("2026-12-04T12:46:50+00:00", None, None),
                               ("2027-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00", 0)]  # rounded up


def test_the_writer_keeps_its_connection_while_batches_follow_one_another(batched, monkeypatch):
    """Batches written back to back (each trace its own batch here, queued while the first was
    written) share one connection of the writer's thread; it is closed when the queue empties, and
    the next batch opens another."""
    gate, held = held_one_at_a_time(batched, monkeypatch)
    with connections_opened(batched) as opened:
        agent = Agent(id="plain", instructions="x", model=ScriptedModel([text_step(str(n)) for n in range(5)]))
        asyncio.run(agent.generate("hi"))
        assert held.wait(10)  # the first batch is being written: the next three queue behind it
        for _ in range(3):
            asyncio.run(agent.generate("hi"))
        gate.set()
        assert batched.flush(timeout=10)
        assert (len(opened), TraceSpan.objects.count()) == (1, 8)
        asyncio.run(agent.generate("hi"))  # after the writer went idle
        assert batched.flush(timeout=10)
        assert (len(opened), TraceSpan.objects.count()) == (2, 10)


def test_a_kept_connection_the_server_closed_meanwhile_is_replaced_before_the_batch(batched, monkeypatch):
    """PostgreSQL: the connection the writer keeps between batches is checked before each batch
    (``agents.connections.connection_checked``); one the server ended is replaced, and the batch is
    written, not failed."""
    if connection.vendor != "postgresql":
        pytest.skip("a server that ends connections: PostgreSQL (runs in the PostgreSQL pass)")
    from django.db import connections

    gate, held = held_one_at_a_time(batched, monkeypatch)
    gated = batched.write
    backend, ended = [], threading.Event()

    def ending_the_kept_connection(items):
        if backend == [] and connections["default"].connection is not None:  # the second batch
            backend.append(connections["default"].connection.info.backend_pid)
            assert ended.wait(10)
        return gated(items)

    monkeypatch.setattr(batched, "write", ending_the_kept_connection)
    failed = batched.stats()["failed"]
    with connections_opened(batched) as opened:
        agent = Agent(id="plain", instructions="x", model=ScriptedModel([text_step("one"), text_step("two")]))
        asyncio.run(agent.generate("hi"))
        assert held.wait(10)
        asyncio.run(agent.generate("hi"))  # queued behind the first: its batch finds the connection kept
        gate.set()
        deadline = time.monotonic() + 10
        while not backend and time.monotonic() < deadline:
            time.sleep(0.01)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", backend)
        ended.set()
        assert batched.flush(timeout=10)
    assert (TraceSpan.objects.count(), batched.stats()["failed"] - failed, len(opened)) == (4, 0, 2)
