"""Counting the SQL statements of a hot path, whatever thread runs them.

The runtime's ORM work runs in worker threads (``sync_to_async``), each with its own connection,
so Django's ``CaptureQueriesContext`` (one connection) would miss it. :func:`statements` records
every statement any connection runs while it is open (through Django's cursors, and through the
driver's cursors ``agents.sql`` runs its statements on), as ``"VERB table"`` (``"SELECT
agents_threadlease"``, ``"INSERT agents_message"``); an ``executemany`` counts once; transaction
control is left out, so both databases give the same list.
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager

from django.db.backends import utils

from agents import sql as hot_path_sql

TABLE = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?', re.IGNORECASE)


def statement_name(sql: str) -> str:
    verb = sql.split(None, 1)[0].upper()
    table = TABLE.search(sql)
    return f"{verb} {table.group(1)}" if table else verb


@contextmanager
def statements():
    """Yield the list the statements run meanwhile are appended to (see the module docstring)."""
    seen: list[str] = []
    lock = threading.Lock()
    execute, executemany = utils.CursorWrapper._execute, utils.CursorWrapper._executemany

    def record(sql: str) -> None:
        name = statement_name(sql)
        # transaction control is not a statement of the path: SQLite's ``BEGIN`` (PostgreSQL's goes
        # through the driver) and the savepoints of atomic blocks nested in a test's
        if name.split()[0] in ("BEGIN", "SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT"):
            return
        with lock:
            seen.append(name)

    def counted_execute(self, sql, params, *args):
        record(sql)
        return execute(self, sql, params, *args)

    def counted_executemany(self, sql, param_list, *args):
        record(sql)
        return executemany(self, sql, param_list, *args)

    def counted_plain(db, sql, *args):
        record(sql)
        return execute_plain(db, sql, *args)

    execute_plain = hot_path_sql._execute_plain
    utils.CursorWrapper._execute = counted_execute
    utils.CursorWrapper._executemany = counted_executemany
    hot_path_sql._execute_plain = counted_plain
    try:
        yield seen
    finally:
        utils.CursorWrapper._execute = execute
        utils.CursorWrapper._executemany = executemany
        hot_path_sql._execute_plain = execute_plain
