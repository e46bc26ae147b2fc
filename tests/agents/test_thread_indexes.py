"""The indexes of the thread tables, pinned: each a write pays for on every row, so none may repeat
what another already serves (an index is usable by any lookup on a prefix of its columns). The
thread's ``resource_id`` and the messages' and inputs' ``thread`` lost their own single-column
indexes to that rule (migration ``agents.0014``, which drops them in place), and so did the trace
spans' ``trace_id`` (``agents.0015``): two or more spans are written per run."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

# the columns of each index but the primary key's own, in order; True: unique
EXPECTED = {
    "agents_thread": {(("resource_id", "thread_id"), True), (("resource_id", "updated_at"), False),
                      (("updated_at",), False)},
    "agents_message": {(("thread_id", "message_id"), True), (("thread_id", "id"), False)},
    "agents_threadinput": {(("thread_id", "input_id"), True), (("thread_id", "status", "id"), False)},
    "agents_tracespan": {(("trace_id", "span_id"), True), (("run_id",), False), (("started_at",), False)},
}


def indexes(table: str) -> set[tuple[tuple[str, ...], bool]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
        pk = connection.introspection.get_primary_key_columns(cursor, table)
    return {(tuple(info["columns"]), bool(info["unique"])) for info in constraints.values()
            if (info["index"] or info["unique"]) and not info["primary_key"] and info["columns"] != pk}


@pytest.mark.parametrize("table", sorted(EXPECTED))
def test_the_thread_tables_have_no_index_another_covers(table):
    found = indexes(table)
    assert found == EXPECTED[table]
    covered = [(columns, unique) for columns, unique in found if not unique and any(
        other != columns and other[:len(columns)] == columns for other, _ in found)]
    assert covered == []
