"""Ledger rows written off the caller's path.

:func:`step_record` is the runtime's step observer (``agents.runtime.tracing.add_step_observer``,
connected in ``LedgerConfig.ready``): it only queues the step's record on the process's
:class:`~agents.batch_writer.BatchWriter`. The writer's thread costs each batch
(``ledger.prices.step_cost``) and writes it with :func:`entries_write`: the rows and their sums
in :class:`~ledger.models.LedgerDaily` and :class:`~ledger.models.LedgerResourceDaily`, in one
transaction, so that they never disagree. A batch that
fails is logged as an error and recorded as a :class:`~ledger.models.LedgerWriteFailure` (so are
steps dropped from a full queue): the dashboard shows them.

Settings: ``MASTRA_LEDGER`` (default on) records steps at all; ``MASTRA_LEDGER_QUEUE`` (8192),
``MASTRA_LEDGER_BATCH`` (500) and ``MASTRA_LEDGER_INTERVAL_MS`` (1000) size the writer.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import defaultdict
from datetime import datetime, timezone
from decimal import Decimal

from django.conf import settings
from django.db import connection, connections, transaction

from agents import sql
from agents.batch_writer import BatchWriter, ProcessWriter
from agents.connections import connection_checked

from .models import LedgerDaily, LedgerEntry, LedgerResourceDaily, LedgerWriteFailure
from .prices import step_cost

logger = logging.getLogger(__name__)

#: the daily sums' tables and their key columns; every one sums the columns of DAILY_SUMS
ROLLUPS = ((LedgerDaily, ("day", "agent_id", "channel", "provider", "model")),
           (LedgerResourceDaily, ("day", "resource_id")))
DAILY_SUMS = ("steps", "priced_steps", "unknown_usage_steps", "input_tokens", "output_tokens", "cached_input_tokens",
              "reasoning_tokens", "cost")
TOKENS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
          ("cached_input_tokens", "cachedInputTokens"), ("reasoning_tokens", "reasoningTokens"))

_writer = ProcessWriter(lambda: BatchWriter(
    "ledger", entries_write_on_own_connection, max_queue=settings.MASTRA_LEDGER_QUEUE,
    max_batch=settings.MASTRA_LEDGER_BATCH, interval_s=settings.MASTRA_LEDGER_INTERVAL_MS / 1000.0,
    on_failure=failure_record, on_drop=drops_record, on_idle=connections.close_all))


def ledger_writer() -> BatchWriter:
    """The process's ledger writer (made on first use)."""
    return _writer.get()


def ledger_writer_shutdown(**kwargs) -> None:
    """Write what the process's ledger writer holds and stop it (a Celery worker process ending)."""
    _writer.shutdown()


def step_record(record: dict) -> None:
    """The step observer: queue ``record`` (no I/O here)."""
    if settings.MASTRA_LEDGER:
        ledger_writer().submit(record)


def _tokens(usage: dict | None, key: str) -> int | None:
    if usage is None:
        return None
    value = usage.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def entry_from(record: dict) -> dict:
    """The ledger row (``{field: value}``) of one step record (``agents.runtime.tracing.steps``), costed."""
    at: datetime = record["at"]
    usage = record.get("usage")
    tokens = {column: _tokens(usage, key) for column, key in TOKENS}
    if tokens["input_tokens"] is None and tokens["output_tokens"] is None:
        tokens = dict.fromkeys(tokens)  # nothing reported: every count unknown
        usage = None
    else:  # counts the provider does not report separately are none of them
        tokens = {k: (v if v is not None else 0) for k, v in tokens.items()}
    cost = step_cost(record.get("provider") or "", record.get("model") or "", usage, at) if usage else None
    return dict(
        created_at=at, day=at.astimezone(timezone.utc).date(), agent_id=(record.get("agent_id") or "")[:255],
        editor_version=str(record.get("editor_version") or "")[:64],
        resource_id=(record.get("resource_id") or "")[:255], thread_id=(record.get("thread_id") or "")[:255],
        run_id=(record.get("run_id") or "")[:64], channel=(record.get("channel") or "")[:16],
        kind=LedgerEntry.Kind.TITLE if record.get("kind") == "title" else LedgerEntry.Kind.STEP,
        provider=(record.get("provider") or "")[:64], model=(record.get("model") or "")[:255],
        step_number=int(record.get("step_number") or 0), latency_ms=int(record.get("latency_ms") or 0),
        cost=cost, **tokens)


def daily_sums(entries: list[dict], key: tuple[str, ...]) -> dict[tuple, list]:
    """What ``entries`` (ledger rows, as :func:`entry_from` makes them) add to the daily sums keyed
    by the columns ``key``: ``{key: [sums in DAILY_SUMS order]}``."""
    sums: dict[tuple, list] = defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0, Decimal(0)])
    for e in entries:
        row = sums[tuple(e[k] for k in key)]
        row[0] += 1
        if e["cost"] is not None:
            row[1] += 1
            row[7] += e["cost"]
        if e["input_tokens"] is None and e["output_tokens"] is None:
            row[2] += 1
        row[3] += e["input_tokens"] or 0
        row[4] += e["output_tokens"] or 0
        row[5] += e["cached_input_tokens"] or 0
        row[6] += e["reasoning_tokens"] or 0
    return sums


def daily_add(model: type, key: tuple[str, ...], sums: dict[tuple, list]) -> None:
    """Add ``sums`` (keyed by the columns ``key``) to ``model``'s daily sums in one statement
    (``INSERT ... ON CONFLICT DO UPDATE``, on PostgreSQL and SQLite alike). Keys go in sorted
    order, so that two writers adding to the same rows lock them in the same order. Call it inside
    the transaction that writes the rows."""
    if not sums:
        return
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = key + DAILY_SUMS
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    updates = ", ".join(f"{quote(c)} = {table}.{quote(c)} + excluded.{quote(c)}" for c in DAILY_SUMS)
    keys = sorted(sums)
    params: list = []
    for k in keys:
        values = list(sums[k])
        values[7] = str(values[7]) if connection.vendor == "sqlite" else values[7]
        params += [*k, *values]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({', '.join(quote(c) for c in columns)}) "
                       f"VALUES {', '.join([one] * len(keys))} "
                       f"ON CONFLICT ({', '.join(quote(c) for c in key)}) DO UPDATE SET {updates}", params)


def entries_write(records: list[dict]) -> int:
    """Write the ledger rows of ``records`` and their rollup sums, in one transaction."""
    entries = [entry_from(record) for record in records]
    with transaction.atomic():
        sql.insert(LedgerEntry, entries)
        for model, key in ROLLUPS:
            daily_add(model, key, daily_sums(entries, key))
    return len(entries)


def entries_write_on_own_connection(records: list[dict]) -> int:
    """:func:`entries_write` from the writer's thread, on a connection of its own: kept while
    batches follow one another (under load a batch waits as the last is written, and opening a
    connection for each was a tenth of the writer's time), closed when the writer goes idle
    (``on_idle``: no connection held per idle process) and after a failed batch (a broken one never
    outlives its batch). A kept connection is checked first (the server may have closed it
    meanwhile: :func:`agents.connections.connection_checked`)."""
    connection_checked()
    try:
        return entries_write(records)
    except BaseException:
        connections.close_all()  # this thread's connections only
        raise


def process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:128]


def failure_record(records: list, error: BaseException) -> None:
    """Record a batch that could not be written (the writer has logged it as an error)."""
    _failure_save(LedgerWriteFailure.Kind.FAILED, len(records), f"{type(error).__name__}: {error}"[:2000])


def drops_record(count: int) -> None:
    """Record steps dropped because the writer's queue was full."""
    _failure_save(LedgerWriteFailure.Kind.DROPPED, count,
                  f"the ledger writer's queue was full ({settings.MASTRA_LEDGER_QUEUE} steps)")


def _failure_save(kind: str, count: int, error: str) -> None:
    try:
        LedgerWriteFailure.objects.create(kind=kind, count=count, error=error, process=process_name())
    finally:
        connections.close_all()


__all__ = ["ROLLUPS", "daily_add", "daily_sums", "entries_write", "entry_from", "ledger_writer",
           "ledger_writer_shutdown", "step_record"]
