"""The cost ledger: one row per answered model step, written off the caller's path by the
background writer, costed from the price table, summed per day in the same transaction."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from agents.runtime import Agent, InMemoryMemory, create_tool
from agents.runtime.agent.title import title_drain
from agents.runtime.errors import ModelError
from agents.runtime.scoring import create_llm_scorer, scoring_drain
from agents.runtime.testing import ScriptedModel, ScriptedStep, text_step, tool_step
from agents.runtime.tracing import CHANNEL_KEY
from ledger.models import LedgerDaily, LedgerEntry, LedgerResourceDaily, LedgerWriteFailure
from agents import sql
from ledger.writer import entries_write, step_record
from tests.writers import connections_opened, held_one_at_a_time

pytestmark = pytest.mark.django_db(transaction=True)

ENTRY_FIELDS = ("agent_id", "resource_id", "thread_id", "run_id", "channel", "provider", "model", "step_number",
                "input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens", "cost")


def add_tool():
    return create_tool(id="add", description="Add two numbers", input_schema={"type": "object"},
                       execute=lambda i: {"sum": i["a"] + i["b"]})


def entries() -> list[tuple]:
    return list(LedgerEntry.objects.order_by("created_at", "step_number").values_list(*ENTRY_FIELDS))


async def written(writer) -> None:
    from asgiref.sync import sync_to_async

    assert await sync_to_async(writer.flush, thread_sensitive=False)(10)


@pytest.mark.asyncio
async def test_each_model_step_of_a_run_is_one_costed_row(ledger_on):
    model = ScriptedModel([tool_step(("c1", "add", {"a": 1, "b": 2}), usage={"inputTokens": 1000, "outputTokens": 20,
                                                                           "cachedInputTokens": 400}),
                           text_step("3", usage=(1200, 5))], provider="openai", model_id="gpt-4o")
    agent = Agent(id="calc", instructions="Add.", model=model, tools={"add": add_tool()})
    result = await agent.generate("1+2?", request_context={CHANNEL_KEY: "api", "mastra__resourceId": "alice"})
    await written(ledger_on)
    # gpt-4o: 2.50 input, 1.25 cached input, 10 output per million tokens
    assert await db(entries) == [
        ("calc", "alice", "", result.run_id, "api", "openai", "gpt-4o", 0, 1000, 20, 400, 0, Decimal("0.0022")),
        ("calc", "alice", "", result.run_id, "api", "openai", "gpt-4o", 1, 1200, 5, 0, 0, Decimal("0.00305")),
    ]
    day = await db(lambda: list(LedgerDaily.objects.values_list(
        "agent_id", "channel", "provider", "model", "steps", "priced_steps", "unknown_usage_steps",
        "input_tokens", "output_tokens", "cached_input_tokens", "cost")))
    assert day == [("calc", "api", "openai", "gpt-4o", 2, 2, 0, 2200, 25, 400, Decimal("0.00525"))]
    by_resource = await db(lambda: list(LedgerResourceDaily.objects.values_list("resource_id", "steps", "cost")))
    assert by_resource == [("alice", 2, Decimal("0.00525"))]


@pytest.mark.asyncio
async def test_a_threads_title_is_one_more_row_of_its_run(ledger_on):
    memory = InMemoryMemory(generate_title=True)
    model = ScriptedModel([text_step("Sure.", usage=(100, 10)), text_step("Trip to Lagos", usage=(30, 4))],
                          provider="openai", model_id="gpt-4o")
    agent = Agent(id="planner", instructions="Plan.", model=model, memory=memory)
    result = await agent.generate("Plan a trip to Lagos", memory={"resource": "alice", "thread": "t1"},
                                  request_context={CHANNEL_KEY: "chat"})
    assert await title_drain()
    assert (await memory.store.get_thread(resource_id="alice", thread_id="t1"))["title"] == "Trip to Lagos"
    await written(ledger_on)
    rows = await db(lambda: list(LedgerEntry.objects.order_by("id").values_list(
        "kind", "step_number", "run_id", "agent_id", "resource_id", "thread_id", "channel", "model", "input_tokens",
        "output_tokens", "cost")))
    # gpt-4o: 2.50 input, 10 output per million tokens
    assert rows == [("step", 0, result.run_id, "planner", "alice", "t1", "chat", "gpt-4o", 100, 10, Decimal("0.00035")),
                    ("title", 1, result.run_id, "planner", "alice", "t1", "chat", "gpt-4o", 30, 4, Decimal("0.000115"))]
    day = await db(lambda: list(LedgerDaily.objects.values_list("agent_id", "steps", "input_tokens", "cost")))
    assert day == [("planner", 2, 130, Decimal("0.000465"))]


@pytest.mark.asyncio
async def test_a_scorers_judge_is_a_run_of_its_own_agent_in_the_ledger(ledger_on):
    judge = Agent(id="judge", instructions="You judge.", model=ScriptedModel(
        [text_step('{"score": 1, "reason": "polite"}', usage=(50, 5))], provider="openai", model_id="gpt-4o-mini"))
    scorer = create_llm_scorer(id="polite", judge=judge)
    agent = Agent(id="support", instructions="Help.", scorers={"polite": scorer}, model=ScriptedModel(
        [text_step("Hello!", usage=(100, 10))], provider="openai", model_id="gpt-4o"))
    result = await agent.generate("hi", request_context={CHANNEL_KEY: "api", "mastra__resourceId": "alice"})
    await scoring_drain()
    await written(ledger_on)
    rows = await db(lambda: list(LedgerEntry.objects.order_by("id").values_list(
        "kind", "run_id", "agent_id", "resource_id", "channel", "model", "input_tokens", "output_tokens")))
    assert rows[0] == ("step", result.run_id, "support", "alice", "api", "gpt-4o", 100, 10)
    assert rows[1][0] == "step" and rows[1][1] != result.run_id
    assert rows[1][2:] == ("judge", "", "", "gpt-4o-mini", 50, 5)


@pytest.mark.asyncio
async def test_a_fallback_step_records_the_model_that_answered(ledger_on):
    primary = ScriptedModel([ModelError("bad request", status=400)], provider="openai", model_id="gpt-4o-mini")
    fallback = ScriptedModel([text_step("hi", usage=(100, 10))], provider="anthropic", model_id="claude-haiku-4-5")
    agent = Agent(id="chain", instructions="Hi.", model=[primary, fallback])
    await agent.generate("hello")
    await written(ledger_on)
    assert [(e[5], e[6], e[-1]) for e in await db(entries)] == [
        ("anthropic", "claude-haiku-4-5", Decimal("0.00015"))]


@pytest.mark.asyncio
async def test_a_step_without_reported_usage_has_unknown_tokens_and_no_cost(ledger_on):
    silent = ScriptedStep([{"type": "text-delta", "text": "hi"}, {"type": "finish", "finish_reason": "stop"}])
    agent = Agent(id="quiet", instructions="Hi.", model=ScriptedModel([silent], provider="openai", model_id="gpt-4o"))
    result = await agent.generate("hello")
    assert result.usage.input_tokens == 0  # the run's result reads zeros, as Mastra's
    await written(ledger_on)
    assert [e[8:] for e in await db(entries)] == [(None, None, None, None, None)]
    day = await db(lambda: LedgerDaily.objects.values_list("steps", "priced_steps", "unknown_usage_steps",
                                                           "input_tokens", "cost").get())
    assert day == (1, 0, 1, 0, Decimal("0"))


@pytest.mark.asyncio
async def test_a_model_without_a_price_records_its_tokens_and_no_cost(ledger_on):
    agent = Agent(id="odd", instructions="Hi.",
                  model=ScriptedModel([text_step("hi", usage=(7, 3))], provider="acme", model_id="frontier-9"))
    await agent.generate("hello")
    await written(ledger_on)
    assert [e[5:] for e in await db(entries)] == [("acme", "frontier-9", 0, 7, 3, 0, 0, None)]


def test_the_step_observer_queues_and_does_no_database_work(ledger_on):
    before = ledger_on.stats()["submitted"]
    record = {"run_id": "r1", "agent_id": "a", "editor_version": None, "resource_id": "alice", "thread_id": None,
              "channel": "chat", "provider": "openai", "model": "gpt-4o", "step_number": 0,
              "usage": {"inputTokens": 1, "outputTokens": 1}, "latency_ms": 5, "at": datetime.now(timezone.utc)}
    with CaptureQueriesContext(connection) as queries:
        step_record(record)
    assert len(queries) == 0
    assert ledger_on.stats()["submitted"] == before + 1


@pytest.mark.asyncio
async def test_a_failing_write_is_logged_counted_and_recorded(ledger_on, monkeypatch, caplog):
    insert = sql.insert

    def broken(model, rows, **kwargs):
        if model is LedgerEntry:
            raise DatabaseError("disk full")
        return insert(model, rows, **kwargs)

    failed_before = ledger_on.stats()["failed"]
    monkeypatch.setattr(sql, "insert", broken)
    agent = Agent(id="calc", instructions="Hi.",
                  model=ScriptedModel([text_step("hi", usage=(7, 3))], provider="openai", model_id="gpt-4o"))
    with caplog.at_level(logging.ERROR, logger="agents.batch_writer"):
        await agent.generate("hello")
        await written(ledger_on)
    assert ledger_on.stats()["failed"] == failed_before + 1
    assert "ledger: writing a batch of 1 item(s) failed" in [r.getMessage() for r in caplog.records
                                                            if r.levelno == logging.ERROR]
    failure = await db(lambda: LedgerWriteFailure.objects.values_list("kind", "count", "error").get())
    assert failure == ("failed", 1, "DatabaseError: disk full")
    assert await db(lambda: (LedgerEntry.objects.count(), LedgerDaily.objects.count(),
                             LedgerResourceDaily.objects.count())) == (0, 0, 0)


def test_rows_and_daily_sums_are_written_together_or_not_at_all(monkeypatch):
    """The rollup's upsert failing rolls the rows back: the two never disagree."""
    import ledger.writer as writer

    def broken(model, key, sums):
        if model is LedgerResourceDaily:  # the second of the two sums: the first is written by then
            raise DatabaseError("deadlock detected")
        real(model, key, sums)

    real = writer.daily_add

    monkeypatch.setattr(writer, "daily_add", broken)
    record = {"run_id": "r1", "agent_id": "a", "resource_id": "alice", "channel": "api", "provider": "openai",
              "model": "gpt-4o", "step_number": 0, "usage": {"inputTokens": 10, "outputTokens": 1},
              "latency_ms": 5, "at": datetime(2026, 6, 1, tzinfo=timezone.utc)}
    with pytest.raises(DatabaseError):
        entries_write([record])
    assert (LedgerEntry.objects.count(), LedgerDaily.objects.count(), LedgerResourceDaily.objects.count()) == (
        0, 0, 0)


def test_batches_add_to_the_same_daily_row(shipped_prices):
    at = datetime(2026, 6, 1, 10, tzinfo=timezone.utc)
    base = {"run_id": "r1", "agent_id": "a", "resource_id": "alice", "channel": "api", "provider": "openai",
            "model": "gpt-4o", "latency_ms": 5, "at": at}
    entries_write([{**base, "step_number": 0, "usage": {"inputTokens": 1_000_000, "outputTokens": 0}},
                   {**base, "step_number": 1, "usage": None}])
    entries_write([{**base, "step_number": 2, "usage": {"inputTokens": 0, "outputTokens": 1_000_000}},
                   {**base, "provider": "acme", "model": "x", "usage": {"inputTokens": 5, "outputTokens": 5}}])
    rows = list(LedgerDaily.objects.order_by("provider").values_list(
        "provider", "steps", "priced_steps", "unknown_usage_steps", "input_tokens", "output_tokens", "cost"))
    assert rows == [("acme", 1, 0, 0, 5, 5, Decimal("0")),
                    ("openai", 3, 2, 1, 1_000_000, 1_000_000, Decimal("12.5"))]
    assert list(LedgerResourceDaily.objects.values_list("resource_id", "steps", "priced_steps", "cost")) == [
        ("alice", 4, 2, Decimal("12.5"))]


async def db(fn):
    from asgiref.sync import sync_to_async

    return await sync_to_async(fn)()


@pytest.mark.asyncio
async def test_an_openai_answer_without_a_usage_chunk_records_unknown_tokens(ledger_on, monkeypatch):
    """At the wire: an OpenAI-compatible server that sends no usage (some proxies drop it)."""
    from tests.runtime.providers.wire import WireServer, isolate_env, openai_chunk, openai_sse, openai_text_reply

    isolate_env(monkeypatch)
    without_usage = openai_sse([openai_chunk({"role": "assistant", "content": ""}), openai_chunk({"content": "hi"}),
                                openai_chunk({}, finish_reason="stop")])
    with WireServer() as server:
        server.reply(without_usage, openai_text_reply(["hi"], usage={"prompt_tokens": 12, "completion_tokens": 3,
                                                                     "total_tokens": 15}))
        agent = Agent(id="wire", instructions="Hi.",
                      model={"id": "openai/gpt-4o-mini", "url": server.url + "/v1", "api_key": "sk-test"})
        first = await agent.generate("hello")
        await agent.generate("hello")
    assert first.usage.input_tokens == 0 and first.text == "hi"
    await written(ledger_on)
    assert [e[5:] for e in await db(entries)] == [
        ("openai", "gpt-4o-mini", 0, None, None, None, None, None),
        ("openai", "gpt-4o-mini", 0, 12, 3, 0, 0, Decimal("0.0000036"))]


def test_steps_dropped_from_a_full_queue_are_recorded(ledger_on):
    from ledger.writer import drops_record

    assert (ledger_on.on_drop, ledger_on.on_failure.__name__) == (drops_record, "failure_record")
    drops_record(7)
    assert list(LedgerWriteFailure.objects.values_list("kind", "count", "error")) == [
        ("dropped", 7, "the ledger writer's queue was full (8192 steps)")]


def test_a_celery_worker_process_that_ends_writes_what_its_ledger_writer_holds(ledger_on, monkeypatch):
    from celery.signals import worker_process_shutdown

    calls = []
    monkeypatch.setattr(ledger_on, "shutdown", lambda *a, **k: calls.append("shutdown"))
    worker_process_shutdown.send(sender=None, pid=1, exitcode=0)
    assert calls == ["shutdown"]


def test_the_writer_keeps_its_connection_between_batches_and_drops_it_after_a_failure(ledger_on, monkeypatch):
    """Batches written back to back share the writer thread's connection; it is closed when the
    queue empties and after a batch that failed (a broken connection never outlives its batch)."""
    insert = sql.insert
    fail = {"next": False}

    def maybe_broken(model, rows, **kwargs):
        if model is LedgerEntry and fail["next"]:
            fail["next"] = False
            raise DatabaseError("disk full")
        return insert(model, rows, **kwargs)

    def record(run_id: str) -> dict:
        return {"run_id": run_id, "agent_id": "a", "editor_version": None, "resource_id": "alice",
                "thread_id": None, "channel": "chat", "provider": "openai", "model": "gpt-4o", "step_number": 0,
                "usage": {"inputTokens": 1, "outputTokens": 1}, "latency_ms": 5, "at": datetime.now(timezone.utc)}

    gate, held = held_one_at_a_time(ledger_on, monkeypatch)
    monkeypatch.setattr(sql, "insert", maybe_broken)
    with connections_opened(ledger_on) as opened:
        step_record(record("r1"))
        assert held.wait(10)
        for run_id in ("r2", "r3", "r4"):
            step_record(record(run_id))
        gate.set()
        assert ledger_on.flush(timeout=10)
        assert (len(opened), LedgerEntry.objects.count()) == (1, 4)
        fail["next"] = True
        step_record(record("r5"))  # fails: its connection is closed; the failure is recorded on another
        assert ledger_on.flush(timeout=10)
        step_record(record("r6"))
        assert ledger_on.flush(timeout=10)
        assert LedgerEntry.objects.count() == 5
        assert len(opened) == 4  # and r5's, the failure record's (r5's was closed), r6's
