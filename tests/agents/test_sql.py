"""``agents.sql``: the hot path's statements give the same rows and writes as the ORM, on the
database of the run (SQLite, or PostgreSQL in the PostgreSQL pass)."""

import json
import threading
from datetime import date, datetime, timedelta, timezone as dt_timezone
from decimal import Decimal

import pytest
from django.db import IntegrityError, OperationalError, connection, connections, transaction
from django.utils import timezone

from agents import sql
from agents.models import Message, Run, Thread, ThreadInput, ThreadLease
from ledger.models import LedgerEntry

pytestmark = pytest.mark.django_db(transaction=True)


def fields_of(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def threads(*ids: str) -> None:
    """Threads whose key is the given id (the statements here treat keys as opaque strings)."""
    for thread_id in ids:
        Thread.objects.create(key=thread_id, thread_id=thread_id, resource_id="r")


def test_select_gives_the_instances_the_orm_gives():
    now = timezone.now()
    threads("t1", "t2")
    ThreadLease.objects.create(thread_id="t1", owner_run_id="run-1", token=3, status="running",
                               expires_at=now + timedelta(seconds=15), abort_requested=True, last_seq=42)
    ThreadLease.objects.create(thread_id="t2")
    for thread_id in ("t1", "t2"):
        mine = sql.select_one(ThreadLease, {"thread_id": thread_id})
        assert isinstance(mine, ThreadLease) and not mine._state.adding
        assert fields_of(mine) == fields_of(ThreadLease.objects.get(thread__thread_id=thread_id))
    lease = sql.select_one(ThreadLease, {"thread_id": "t1"})
    assert lease.expires_at.tzinfo is not None and lease.abort_requested is True and lease.token == 3
    assert (lease.thread_id, lease.thread.resource_id) == ("t1", "r")
    assert sql.select_one(ThreadLease, {"thread_id": "nope"}) is None


def test_json_values_and_foreign_keys_round_trip():
    Thread.objects.create(key="t", thread_id="t", resource_id="r", metadata={"a": [1, {"b": None}], "é": "ü"})
    content = [{"type": "text", "text": "<x> & \"y\""}]
    sql.insert(Message, [{"message_id": "m1", "thread_id": "t", "resource_id": "r", "role": "user",
                          "content": content, "created_at": timezone.now()}])
    stored = Message.objects.get(message_id="m1")
    assert (stored.content, stored.metadata, stored.type, stored.thread_id) == (content, {}, "", "t")
    mine = sql.select_one(Message, {"message_id": "m1"})
    assert fields_of(mine) == fields_of(stored)
    assert sql.select_one(Thread, {"key": "t"}).metadata == {"a": [1, {"b": None}], "é": "ü"}


def test_json_given_as_text_is_stored_as_the_same_value():
    Thread.objects.create(key="t", thread_id="t", resource_id="r")
    content = [{"type": "text", "text": "<x> & \"y\" é", "n": 1.5, "none": None}]
    for message_id, value in (("as-data", content), ("as-text", sql.JsonText(json.dumps(content))),
                              ("ascii-escaped", sql.JsonText(json.dumps(content, ensure_ascii=True)))):
        sql.insert(Message, [{"message_id": message_id, "thread_id": "t", "resource_id": "r", "role": "user",
                              "content": value, "created_at": timezone.now()}])
    stored = {m.message_id: m.content for m in Message.objects.all()}
    assert stored == {"as-data": content, "as-text": content, "ascii-escaped": content}  # not a string of JSON
    # a JSON text in a text field is only text
    sql.insert(Message, [{"message_id": "m", "thread_id": "t", "resource_id": "r", "role": "user",
                          "content": [], "type": sql.JsonText('"x"'), "created_at": timezone.now()}])
    assert Message.objects.get(message_id="m").type == '"x"'


@pytest.mark.parametrize("stored", ['{"a": [1, 2.5, null, true], "b": "\\u00e9", "c": {"d": "<x>"}}', '[]',
                                    '"text"', '12', '1e400', 'null', ' {"spaced": 1} '])
def test_json_columns_read_as_the_orm_reads_them(stored):
    """What a JSON column holds is read as the field reads it, also JSON written around the field
    (raw SQL, another program: spaces around it, a number too large for a float)."""
    Thread.objects.create(key="t", thread_id="t", resource_id="r")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE agents_thread SET metadata = %s WHERE key = %s", [stored, "t"])
    orm = Thread.objects.get(key="t").metadata
    mine = sql.select_one(Thread, {"key": "t"}).metadata
    assert mine == orm and type(mine) is type(orm)
    assert sql.select_values(Thread, ("metadata",), {"key": "t"}) == [[orm]]


def test_times_read_as_the_orm_reads_them(settings):
    stamp = datetime(2026, 12, 6, 13, 4, 5, 678901, tzinfo=dt_timezone.utc)
    Thread.objects.create(key="t", thread_id="t", resource_id="r")
    Thread.objects.filter(key="t").update(created_at=stamp, updated_at=stamp.replace(microsecond=0))
    mine, orm = sql.select_one(Thread, {"key": "t"}), Thread.objects.get(key="t")
    assert (mine.created_at, mine.updated_at) == (orm.created_at, orm.updated_at) == (stamp, stamp.replace(microsecond=0))
    assert mine.created_at.tzinfo is not None and mine.created_at.utcoffset() == timedelta(0)
    settings.USE_TZ = False  # naive times, as the ORM gives them then
    mine, orm = sql.select_one(Thread, {"key": "t"}), Thread.objects.get(key="t")
    assert mine.created_at == orm.created_at and mine.created_at.tzinfo is None


def test_in_filters_order_and_limit():
    threads("t")
    for i in range(5):
        Message.objects.create(message_id=f"m{i}", thread_id="t", resource_id="r", role="user", content=[],
                               created_at=timezone.now())
    newest_three = sql.select(Message, {"thread_id": "t"}, order_by=("-id",), limit=3)
    assert [m.message_id for m in newest_three] == ["m4", "m3", "m2"]
    picked = sql.select(Message, {"thread_id": "t", "message_id": ["m0", "m3", "zz"]}, order_by=("id",))
    assert [m.message_id for m in picked] == ["m0", "m3"]
    assert sql.exists(Message, {"thread_id": "t", "role": ["assistant", "user"]})
    assert not sql.exists(Message, {"thread_id": "t", "role": ["assistant"]})


def test_insert_fills_defaults_and_times_and_may_ignore_conflicts():
    before = timezone.now()
    threads("t", "t2")
    assert sql.insert(ThreadInput, [{"input_id": "i1", "thread_id": "t", "agent_id": "a", "kind": "deliver",
                                     "signal": {"contents": "hi"}}]) == 1
    row = ThreadInput.objects.get(input_id="i1")
    assert (row.status, row.stream_options, row.run_id, row.consumed_at, row.attempts) == (
        "pending", {}, None, None, 0)
    assert before <= row.created_at <= timezone.now()
    duplicate = {"input_id": "i1", "thread_id": "t", "agent_id": "a", "kind": "queue", "signal": {}}
    assert sql.insert(ThreadInput, [duplicate], ignore_conflicts=True) == 0
    assert ThreadInput.objects.get(input_id="i1").thread_id == "t"
    with pytest.raises(IntegrityError), transaction.atomic():
        sql.insert(ThreadInput, [duplicate])


def test_insert_of_several_rows():
    sql.insert(Run, [{"id": f"run-{i}", "agent_id": "a", "started_at": timezone.now()} for i in range(3)])
    assert sorted(Run.objects.values_list("id", "status", "usage")) == [
        ("run-0", "running", {}), ("run-1", "running", {}), ("run-2", "running", {})]


def test_update_changes_the_matching_rows_and_touches_auto_now_fields():
    old = timezone.now() - timedelta(days=1)
    threads("a", "b")
    for thread_id in ("a", "b"):
        ThreadLease.objects.create(thread_id=thread_id)
    ThreadLease.objects.update(updated_at=old)
    assert sql.update(ThreadLease, {"thread_id": "a", "token": 0}, {"token": 1, "status": "running"}) == 1
    assert sql.update(ThreadLease, {"thread_id": "a", "token": 0}, {"token": 2}) == 0  # compare-and-set
    a, b = ThreadLease.objects.get(thread__thread_id="a"), ThreadLease.objects.get(thread__thread_id="b")
    assert (a.token, a.status, b.token, b.status) == (1, "running", 0, "idle")
    assert a.updated_at > old and b.updated_at == old


def test_instances_are_updated_each_with_its_values_where_they_still_match():
    """``update_instances``: one statement per row, its own values, a compare-and-set on ``where``;
    the count is of the rows changed."""
    sql.insert(Run, [{"id": f"run-{i}", "agent_id": "a", "started_at": timezone.now(), "error": "claimed"}
                     for i in range(3)])
    Run.objects.filter(id="run-2").update(error="taken by another")
    runs = [Run(id=f"run-{i}", status="completed", steps=i + 1, error="claimed") for i in range(3)]
    assert Run.objects.update_instances(runs, ("status", "steps"), where={"error": "claimed"}) == 2
    assert sorted(Run.objects.values_list("id", "status", "steps")) == [
        ("run-0", "completed", 1), ("run-1", "completed", 2), ("run-2", "running", 0)]
    assert Run.objects.update_instances([], ("status",), where={"error": "claimed"}) == 0


def test_a_row_selected_for_update_is_locked_until_commit():
    threads("t")
    ThreadLease.objects.create(thread_id="t")
    other: dict = {}

    def writer():
        # another connection, as another process: its write waits for the lock (or times out)
        try:
            with connections["default"].cursor() as cursor:
                if connection.vendor == "postgresql":
                    cursor.execute("SET lock_timeout = '300ms'")
                    cursor.execute("UPDATE agents_threadlease SET token = 9 WHERE thread_id = 't'")
                else:
                    cursor.execute("PRAGMA busy_timeout = 300")
                    cursor.execute("BEGIN IMMEDIATE")
                    cursor.execute("ROLLBACK")
            other["outcome"] = "wrote"
        except OperationalError as exc:  # the lock held: the lock timeout ends the wait
            other["outcome"] = str(exc)
        finally:
            connections.close_all()

    with transaction.atomic():
        assert sql.select_one(ThreadLease, {"thread_id": "t"}, for_update=True).thread_id == "t"
        thread = threading.Thread(target=writer)
        thread.start()
        thread.join(5)
    # only the lock's own error counts: any other failure of the writer fails the test
    expected = "canceling statement due to lock timeout" if connection.vendor == "postgresql" else "database is locked"
    assert other["outcome"].startswith(expected), other
    assert ThreadLease.objects.get(thread__thread_id="t").token == 0


def test_upsert_inserts_then_updates_every_other_column():
    started = timezone.now()
    sql.upsert(Run, {"id": "run-u", "agent_id": "a", "status": "running", "started_at": started})
    sql.upsert(Run, {"id": "run-u", "agent_id": "a", "status": "completed", "usage": {"totalTokens": 3},
                     "steps": 2, "started_at": started, "finished_at": started})
    run = Run.objects.get(id="run-u")
    assert (run.status, run.usage, run.steps, run.started_at, run.finished_at) == (
        "completed", {"totalTokens": 3}, 2, started, started)
    assert Run.objects.count() == 1


def test_the_models_default_manager_runs_the_same_statements():
    threads("t")
    ThreadLease.objects.create(thread_id="t", token=2)
    assert ThreadLease.objects.select_row({"thread_id": "t"}).token == 2
    assert ThreadLease.objects.select_row({"thread_id": "nope"}) is None
    assert ThreadLease.objects.row_exists({"thread_id": "t"}) is True
    assert ThreadLease.objects.update_rows({"thread_id": "t", "token": 2}, {"token": 3}) == 1
    assert ThreadLease.objects.update_rows({"thread_id": "t", "token": 2}, {"token": 4}) == 0
    assert [lease.token for lease in ThreadLease.objects.select_rows({"thread_id": ["t", "x"]})] == [3]
    assert ThreadInput.objects.insert_rows([{"input_id": "i", "thread_id": "t", "agent_id": "a", "kind": "deliver",
                                             "signal": {}}]) == 1
    assert ThreadInput.objects.get(input_id="i").status == "pending"


def test_statements_run_on_the_drivers_cursor_unless_django_observes_them(settings):
    """Unobserved, a statement skips Django's cursor wrapper; an execute wrapper or DEBUG's query log
    sees every one (the same SQL)."""
    threads("t")
    seen: list[str] = []

    def wrapper(execute, sql_text, params, many, context):
        seen.append(sql_text)
        return execute(sql_text, params, many, context)

    assert sql.exists(Thread, {"key": "t"}) and seen == []
    with connection.execute_wrapper(wrapper):
        assert sql.exists(Thread, {"key": "t"})
        sql.update(Thread, {"key": "t"}, {"title": "x"})
    assert [s.split()[0] for s in seen] == ["SELECT", "UPDATE"]
    settings.DEBUG = True
    connection.queries_log.clear()
    assert sql.select_one(Thread, {"key": "t"}).title == "x"
    assert len(connection.queries) == 1 and connection.queries[0]["sql"].startswith("SELECT")


def test_the_drivers_errors_are_djangos_and_a_read_holds_no_snapshot():
    threads("t")
    with pytest.raises(IntegrityError), transaction.atomic():
        sql.insert(Thread, [{"key": "t", "thread_id": "t", "resource_id": "r"}])
    # outside a transaction, each read sees what other connections committed before it
    assert sql.select_one(Thread, {"key": "t"}).title == ""

    def rename():
        Thread.objects.filter(key="t").update(title="renamed")
        connections.close_all()

    writer = threading.Thread(target=rename)
    writer.start()
    writer.join(5)
    assert sql.select_one(Thread, {"key": "t"}).title == "renamed"
    assert sql.exists(Thread, {"key": "t", "title": "renamed"})


@pytest.mark.parametrize("stamp", [timezone.now(), timezone.now().replace(microsecond=0)], ids=["micro", "whole"])
def test_times_are_stored_as_the_orm_stores_them(stamp):
    threads("t")
    Message.objects.create(message_id="orm", thread_id="t", resource_id="r", role="user", content=[], created_at=stamp)
    sql.insert(Message, [{"message_id": "mine", "thread_id": "t", "resource_id": "r", "role": "user", "content": [],
                          "created_at": stamp}])
    with connection.cursor() as cursor:
        cursor.execute("SELECT message_id, created_at FROM agents_message ORDER BY message_id")
        (mine, stored_mine), (orm, stored_orm) = cursor.fetchall()
    assert (mine, orm) == ("mine", "orm") and stored_mine == stored_orm
    assert sql.select_one(Message, {"message_id": "mine"}).created_at == stamp


@pytest.mark.parametrize("model, name, value", [
    (Message, "thread", "t1"),  # a key to a thread's text column
    (Message, "thread", ""),  # an empty key: the field's own rule (NULL where the backend wants it)
    (Message, "thread", None),
    (Run, "status", Run.Status.RUNNING),  # a choice: a str subclass
    (ThreadInput, "signal", {"type": "user", "contents": ["é", {"n": 1.5, "none": None}]}),
    (Message, "content", [{"type": "text", "text": "<x> & \"y\""}]),
    (ThreadLease, "expires_at", None),
], ids=["key", "empty-key", "no-key", "choice", "json-dict", "json-list", "no-time"])
def test_values_are_prepared_as_the_fields_prepare_them(model, name, value):
    """The quick paths of ``sql._prep_save`` give what the field's ``get_db_prep_save`` gives."""
    field = model._meta.get_field(name)
    mine, orm = sql._prep_save(field, value, connection), field.get_db_prep_save(value, connection)
    if hasattr(orm, "obj"):  # PostgreSQL's jsonb parameter: the value it wraps and how it dumps it
        assert (type(mine), mine.obj, mine.dumps(mine.obj)) == (type(orm), orm.obj, orm.dumps(orm.obj))
    else:
        assert (type(mine), mine) == (type(orm), orm)


@pytest.mark.parametrize("model, name, value", [
    (LedgerEntry, "day", date(2026, 12, 5)),
    (LedgerEntry, "day", None),
    (LedgerEntry, "cost", Decimal("0.0000012345")),
    (LedgerEntry, "cost", Decimal("0E-10")),
    (LedgerEntry, "cost", None),
    (LedgerEntry, "created_at", datetime(2026, 12, 5, 19, 22, 33, 149099, tzinfo=dt_timezone.utc)),
    (LedgerEntry, "created_at", datetime(2026, 12, 5, 20, 22, 33, tzinfo=dt_timezone(timedelta(hours=1)))),
    (ThreadInput, "signal", {"type": "user", "contents": "hi"}),
    (ThreadInput, "signal", sql.JsonText('{"type": "user"}')),
    (Message, "content", []),
], ids=["date", "no-date", "decimal", "zero-decimal", "no-decimal", "utc-time", "other-zone", "json", "json-text",
        "empty-list"])
def test_an_inserts_columns_prepare_values_as_the_fields_do(model, name, value):
    """The preparation an insert's plan holds for a column (``sql._column_prep``) gives what the
    field's ``get_db_prep_save`` gives (JSON text: the value it encodes)."""
    field = model._meta.get_field(name)
    mine = sql._column_prep(field)(field, value, connection)
    orm = field.get_db_prep_save(json.loads(value) if type(value) is sql.JsonText else value, connection)
    if hasattr(orm, "obj"):  # PostgreSQL's jsonb parameter: what it sends
        assert (type(mine), mine.dumps(mine.obj)) == (type(orm), orm.dumps(orm.obj))
    else:
        assert (type(mine), mine) == (type(orm), orm)


def test_count_gives_the_orms_count():
    threads("t1", "t2")
    rows = [("t1", "pending"), ("t1", "pending"), ("t1", "consumed"), ("t2", "pending")]
    for i, (thread_id, status) in enumerate(rows):
        ThreadInput.objects.create(input_id=f"i{i}", thread_id=thread_id, agent_id="a", kind="deliver", status=status,
                                   signal={})
    for where in ({"thread_id": "t1", "status": "pending"}, {"thread_id": "t1"}, {"thread_id": "none"},
                  {"thread_id": ["t1", "t2"], "status": ThreadInput.Status.PENDING}):
        orm = ThreadInput.objects.filter(**{k + ("__in" if isinstance(v, list) else ""): v for k, v in where.items()})
        assert sql.count(ThreadInput, where) == ThreadInput.objects.row_count(where) == orm.count()
