"""Plain statements on the models for the thread hot path, without per-call query compilation.

The ORM compiles a query again on every call, and on SQLite that costs several times what running
the statement costs. A thread wake runs about twenty statements (accept the input, take the lease,
read the history, drain, write the events, the messages and the run record, settle the lease), so
``agents.threads`` and ``agents.store`` run those through these helpers instead, as methods of the
models' default manager (:class:`StatementManager`: ``ThreadLease.objects.select_row(...)``):

- the SQL is built from the model's metadata once per (database vendor, model, shape) and cached;
- it runs on Django's connection, so it is in the caller's transaction (``transaction.atomic``);
- values go through each field's ``get_db_prep_save`` / ``get_db_prep_value`` and rows come back
  through the backend's and the field's converters, as the ORM does, into model instances
  (``Model.from_db``); the two every row has, SQLite's for a time and a JSON field's, are done
  without their layers (:func:`_quick`: the same values, one call each instead of four to six).

Each statement runs on the driver's own cursor (one created and closed per statement, in the
caller's transaction, its errors turned into Django's by ``wrap_database_errors``), without
Django's cursor wrapper: measured on SQLite, a one-row lookup took 5 µs on the driver's cursor and
42 µs through Django's (its per-call wrapping, the ``%s``-to-``?`` rewrite of every statement,
the async-safety and thread-sharing checks), several times over in each wake. Where anything
observes Django's statements (``DEBUG``'s query log, ``connection.execute_wrapper``), they go
through Django's cursor instead, so that nothing is hidden from it.

Only what the hot path needs: equality and ``IN`` filters joined by AND, ordering by columns, a
limit, counts, ``FOR UPDATE`` where the backend has it (SQLite locks the database on
``BEGIN IMMEDIATE``), inserts that may ignore conflicts, and updates; for batches of model instances
(the inbox's group commit and dispatch), one executemany insert, or update by primary key (with a
compare-and-set). Anything else goes through the ORM.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone as dt_timezone
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterable

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX
from django.db.backends.sqlite3.operations import DatabaseOperations as SQLiteOperations
from django.utils import timezone

from agents.json_text import dumps

UTC = dt_timezone.utc


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def _db():
    """This thread's connection (one lookup: every use of the ``connection`` proxy is another)."""
    return connections[DEFAULT_DB_ALIAS]


@lru_cache(maxsize=1024)
def _native(vendor: str, sql: str) -> str:
    """``sql`` in the driver's parameter style (SQLite's ``?``), as Django's cursor rewrites it."""
    return FORMAT_QMARK_REGEX.sub("?", sql).replace("%%", "%") if vendor == "sqlite" else sql


def execute(db, sql: str, params: list, *, many: bool = False, fetch: str | None = None) -> Any:
    """Run ``sql`` (``%s`` placeholders) with ``params`` (a list of lists with ``many``) on ``db``;
    return ``fetch``'s result (``"all"`` the rows, ``"one"`` the first row or None), or the row
    count. The statement's cursor is closed before returning (an open SQLite cursor would keep its
    read transaction)."""
    if db.execute_wrappers or db.queries_logged:
        with db.cursor() as cursor:
            return _run(cursor, sql, params, many, fetch)
    return _execute_plain(db, sql, params, many, fetch)


def _execute_plain(db, sql: str, params: list, many: bool, fetch: str | None) -> Any:
    """:func:`execute` on the driver's cursor."""
    if db.connection is None:
        db.ensure_connection()
    db.validate_no_broken_transaction()
    with db.wrap_database_errors:
        cursor = db.connection.cursor() if db.vendor == "sqlite" else db.create_cursor()
        try:
            return _run(cursor, _native(db.vendor, sql), params, many, fetch)
        finally:
            cursor.close()


def _run(cursor, sql: str, params: list, many: bool, fetch: str | None) -> Any:
    if many:
        cursor.executemany(sql, params)
    else:
        cursor.execute(sql, params)
    if fetch == "all":
        return cursor.fetchall()
    if fetch == "one":
        return cursor.fetchone()
    return cursor.rowcount


@lru_cache(maxsize=64)
def _concrete(model: type[models.Model]) -> tuple:
    """The columns an insert writes: every concrete field but an auto-incremented primary key."""
    return tuple(f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField)))


#: a column absent from a row (its default, or the current time, is written)
_ABSENT = object()


def _absent_value(field) -> tuple:
    """``(value, make)`` for a column a row leaves out: ``make`` (called for each row) when the
    field's default is a callable or the database's own, else None and the ``value`` that
    ``get_default`` always returns (a constant default, or the field's empty value)."""
    if (field.has_default() and callable(field.default)) or field.has_db_default():
        return None, field.get_default
    return field.get_default(), None


def _column_prep(field):
    """The preparation of a value that is not plain for its column (:func:`_prep_other`, or its
    path for the field's type, without the tests of the others)."""
    if type(field) is models.DateTimeField:
        return _prep_time
    if type(field) is models.JSONField:
        return _prep_json
    if type(field) is models.DateField:
        return _prep_date
    if type(field) is models.DecimalField:
        return _prep_decimal
    return _prep_other


@lru_cache(maxsize=64)
def _insert_fields(model: type[models.Model]) -> tuple:
    """Per column of an insert: (field, name, its attname when another key names it (a foreign
    key's ``thread_id``) else None, whether an absent value is the current time, the absent value
    or the callable that makes it (:func:`_absent_value`), the type of the values it takes as they
    are or None and whether it is a key (:func:`_plain_kind`), the preparation of other values)."""
    return tuple((f, f.name, f.attname if f.attname != f.name else None,
                  bool(getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)),
                  *_absent_value(f), *_plain_kind(f), _column_prep(f))
                 for f in _concrete(model))


def _where(model: type[models.Model], shape: tuple) -> str:
    """``shape`` is ((field name, None | number of IN values), ...)."""
    terms = []
    for name, many in shape:
        column = _quote(model._meta.get_field(name).column)
        if many is None:
            terms.append(f"{column} = %s")
        else:
            terms.append(f"{column} IN ({', '.join(['%s'] * many)})")
    return " AND ".join(terms) if terms else "1 = 1"


def _shape(where: dict) -> tuple:
    return tuple((name, len(value) if isinstance(value, (list, tuple, set, frozenset)) else None)
                 for name, value in where.items())


#: fields whose values go to the database as they are when they hold the type named here (the
#: field's ``get_db_prep_value`` / ``get_db_prep_save`` would return them unchanged); other fields
#: (dates, JSON, keys) and other values go through those methods
_PLAIN_FIELDS = {models.CharField: str, models.TextField: str, models.BooleanField: bool,
                 models.IntegerField: int, models.BigIntegerField: int, models.SmallIntegerField: int,
                 models.PositiveIntegerField: int, models.PositiveSmallIntegerField: int,
                 models.PositiveBigIntegerField: int}


class JsonText(str):
    """JSON already encoded, for a ``JSONField`` of :func:`insert`: stored as it is (the field would
    encode a value it is given, and a caller holding the text would otherwise decode it to have it
    encoded again). The text must be valid JSON."""

    __slots__ = ()


def _json_param(value: JsonText, db):
    if db.vendor == "postgresql":  # the driver's jsonb parameter, written as the text it is given
        from psycopg.types.json import Jsonb

        return Jsonb(value, dumps=str)
    return str(value)


def _json_value(value, db):
    """A JSON field's parameter for ``value`` (a dict or a list) as the field makes it without an
    encoder of its own (``json.dumps``), from ``agents.json_text``'s encoder: SQLite's text, or
    PostgreSQL's jsonb parameter, which the driver dumps when it sends it."""
    if db.vendor == "postgresql":
        from psycopg.types.json import Jsonb

        return Jsonb(value, dumps=dumps)
    return dumps(value)


#: :func:`_plain_kind` by the field's ``id`` (a field's own hash is a Python method, and this is
#: looked up for every value written); each entry holds its field, whose id no other object can
#: take while it lives
_KINDS: dict[int, tuple] = {}


def _plain_kind(field) -> tuple:
    """``(type, is a key)``: a plain field's (:data:`_PLAIN_FIELDS`) value type, or for a foreign key
    to a text column (a thread's key) ``str``: such a key's ``get_db_prep_save`` is its target's,
    which returns a non-empty string as it is (an empty one may be stored as NULL). ``None`` for
    any other field."""
    entry = _KINDS.get(id(field))
    if entry is None:
        plain = _PLAIN_FIELDS.get(type(field))
        if plain is None and isinstance(field, models.ForeignKey) and \
                type(field.target_field) in (models.CharField, models.TextField):
            entry = (str, True, field)
        else:
            entry = (plain, False, field)
        _KINDS[id(field)] = entry
    return entry[0], entry[1]


def _plain(field, value) -> bool:
    plain, key = _plain_kind(field)
    if plain is None:
        return False
    if value is None:
        return True
    if type(value) is plain:
        return not key or value != ""
    # a text column's choices (``TextChoices`` members) are strings: Django sends them as they are
    return plain is str and not key and isinstance(value, str)


def _prep_save(field, value, db):
    if _plain(field, value):
        return value
    return _prep_other(field, value, db)


def _prep_other(field, value, db):
    """:func:`_prep_save` of a value that is not plain for its field."""
    if type(value) is JsonText and isinstance(field, models.JSONField):
        return _json_param(value, db)
    if type(field) is models.JSONField and type(value) in (dict, list):
        # what the field's ``get_db_prep_save`` comes to for a dict or a list, without its layers
        # (``json.dumps(value, cls=field.encoder)``; without an encoder of the field's own, from
        # one built once: ``agents.json_text``)
        if field.encoder is None:
            return _json_value(value, db)
        return db.ops.adapt_json_value(value, field.encoder)
    if type(field) is models.DateTimeField:
        return _prep_time(field, value, db)
    return field.get_db_prep_save(value, db)


def _prep_time(field, value, db):
    """:func:`_prep_other` of a ``DateTimeField``'s value."""
    if value is None:
        return None
    if type(value) is datetime and value.tzinfo is UTC:
        # what the backends make of an aware UTC time (the stamps the hot path writes): PostgreSQL's
        # driver takes it as it is; SQLite stores the text of its naive form in the connection's zone
        if db.vendor == "postgresql":
            return value
        if db.vendor == "sqlite" and db.timezone is UTC:
            return str(value.replace(tzinfo=None))
    return field.get_db_prep_save(value, db)


def _prep_date(field, value, db):
    """:func:`_prep_other` of a ``DateField``'s value: a date goes as the backend adapts it."""
    if type(value) is date:
        return db.ops.adapt_datefield_value(value)
    return _prep_other(field, value, db)


def _prep_decimal(field, value, db):
    """:func:`_prep_other` of a ``DecimalField``'s value: a finite ``Decimal`` goes as the backend
    adapts it (the field would make the same number again first)."""
    if type(value) is Decimal and value.is_finite():
        return db.ops.adapt_decimalfield_value(value, field.max_digits, field.decimal_places)
    return _prep_other(field, value, db)


def _prep_json(field, value, db):
    """:func:`_prep_other` of a ``JSONField``'s value."""
    kind = type(value)
    if kind is JsonText:
        return _json_param(value, db)
    if (kind is dict or kind is list) and field.encoder is None:
        return _json_value(value, db)
    return _prep_other(field, value, db)


def _prep_value(field, value, db):
    return value if _plain(field, value) else field.get_db_prep_value(value, db, prepared=False)


def _where_params(model: type[models.Model], where: dict, db) -> list:
    params = []
    for field, value in zip(_fields(model, tuple(where)), where.values()):
        if isinstance(value, (list, tuple, set, frozenset)):
            params.extend(_prep_value(field, v, db) for v in value)
        else:
            params.append(_prep_value(field, value, db))
    return params


@lru_cache(maxsize=256)
def _select_sql(vendor: str, model: type[models.Model], shape: tuple, order_by: tuple, limit: int | None,
                for_update: bool, names: tuple | None = None) -> str:
    """The statement of :func:`select` (every column), or of :func:`select_values` (``names``'s)."""
    opts = model._meta
    fields = opts.concrete_fields if names is None else [opts.get_field(name) for name in names]
    columns = ", ".join(_quote(f.column) for f in fields)
    sql = f"SELECT {columns} FROM {_quote(opts.db_table)} WHERE {_where(model, shape)}"
    if order_by:
        sql += " ORDER BY " + ", ".join(
            _quote(opts.get_field(o.lstrip("-")).column) + (" DESC" if o.startswith("-") else " ASC")
            for o in order_by)
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    if for_update and _db().features.has_select_for_update:
        sql += " FOR UPDATE"
    return sql


@lru_cache(maxsize=64)
def _converters(vendor: str, model: type[models.Model]) -> list:
    """Per column: the backend's and the field's converters (what the ORM applies to a row)."""
    return _field_converters(model._meta.concrete_fields, model._meta.db_table)


def select(model: type[models.Model], where: dict, *, order_by: tuple = (), limit: int | None = None,
           for_update: bool = False) -> list:
    """Instances of ``model`` matching ``where`` (``{field: value or list of values}``)."""
    db = _db()
    sql = _select_sql(db.vendor, model, _shape(where), tuple(order_by), limit, for_update)
    rows = execute(db, sql, _where_params(model, where, db), fetch="all")
    if not rows:
        return []
    converters = _converters(db.vendor, model)
    names = _attnames(model)
    return [model.from_db(db.alias, names, _converted(row, converters, db) if converters else row) for row in rows]


def _converted(row: tuple, converters: list, db) -> list:
    """``row`` with each of ``converters``' columns converted (``(index, column, functions)``)."""
    row = list(row)
    for i, column, funcs in converters:
        value = row[i]
        for func in funcs:
            value = func(value, column, db)
        row[i] = value
    return row


@lru_cache(maxsize=64)
def _values_converters(vendor: str, model: type[models.Model], names: tuple) -> list:
    """Per field of ``names``: the backend's and the field's converters (as :func:`_converters`)."""
    return _field_converters([model._meta.get_field(name) for name in names], model._meta.db_table)


def _field_converters(fields, table: str) -> list:
    """``(index, column, functions)`` of each of ``fields`` (columns of ``table``) that the backend or
    the field converts."""
    db = _db()
    out = []
    for i, field in enumerate(fields):
        column = field.get_col(table)
        funcs = [_quick(f, field) for f in db.ops.get_db_converters(column) + field.get_db_converters(db)]
        if funcs:
            out.append((i, column, funcs))
    return out


_scan = json.JSONDecoder().scan_once


def _quick(func, field):
    """``func``, a converter of ``field``'s column, or the same conversion without its layers for the
    two that every read of a time or of JSON makes: SQLite's time converter and a JSON field's own
    (when the field has no decoder of its own)."""
    plain = getattr(func, "__func__", None)
    if plain is SQLiteOperations.convert_datetimefield_value:
        return _sqlite_datetime
    if plain is models.JSONField.from_db_value and field.decoder is None:
        return _json_from_db
    return func


def _json_from_db(value, expression, db):
    """``JSONField.from_db_value`` without its layers: the C scanner reads the text; a text it does
    not read whole (spaces around it, not JSON, not text) goes the field's own way, which gives the
    same value or the text itself."""
    if value.__class__ is str:
        try:
            obj, end = _scan(value, 0)
        except (StopIteration, ValueError):  # not JSON at its start, or broken within
            pass
        else:
            if end == len(value):
                return obj
    return expression.output_field.from_db_value(value, expression, db)


def _sqlite_datetime(value, expression, db):
    """SQLite's ``convert_datetimefield_value`` for the usual value, the driver's naive time: made
    aware in the connection's zone (what ``make_aware`` does); any other goes the backend's way."""
    if value.__class__ is datetime and value.tzinfo is None:
        zone = db.timezone  # None without USE_TZ
        if zone is not None:
            return value.replace(tzinfo=zone)
    return db.ops.convert_datetimefield_value(value, expression, db)


def select_values(model: type[models.Model], names: tuple, where: dict, *, order_by: tuple = (),
                  limit: int | None = None) -> list[list]:
    """The values of the fields ``names`` (a foreign key's: its key) of the rows matching ``where``,
    as the ORM converts them (a JSON column decoded, a time aware), one list per row: no model
    instance is made (for reads that only turn rows into dicts)."""
    db = _db()
    sql = _select_sql(db.vendor, model, _shape(where), tuple(order_by), limit, False, names)
    rows = execute(db, sql, _where_params(model, where, db), fetch="all")
    converters = _values_converters(db.vendor, model, names)
    return [_converted(row, converters, db) for row in rows]


@lru_cache(maxsize=64)
def _attnames(model: type[models.Model]) -> list:
    return [f.attname for f in model._meta.concrete_fields]


def select_one(model: type[models.Model], where: dict, *, for_update: bool = False):
    """The first instance matching ``where`` (usually a unique key), or None."""
    found = select(model, where, limit=1, for_update=for_update)
    return found[0] if found else None


@lru_cache(maxsize=128)
def _exists_sql(vendor: str, model: type[models.Model], shape: tuple) -> str:
    return f"SELECT 1 FROM {_quote(model._meta.db_table)} WHERE {_where(model, shape)} LIMIT 1"


def exists(model: type[models.Model], where: dict) -> bool:
    db = _db()
    return execute(db, _exists_sql(db.vendor, model, _shape(where)), _where_params(model, where, db),
                   fetch="one") is not None


@lru_cache(maxsize=128)
def _count_sql(vendor: str, model: type[models.Model], shape: tuple) -> str:
    return f"SELECT COUNT(*) FROM {_quote(model._meta.db_table)} WHERE {_where(model, shape)}"


def count(model: type[models.Model], where: dict) -> int:
    """How many rows match ``where``."""
    db = _db()
    return execute(db, _count_sql(db.vendor, model, _shape(where)), _where_params(model, where, db), fetch="one")[0]


@lru_cache(maxsize=64)
def _exists_any_sql(vendor: str, shapes: tuple) -> str:
    return "SELECT " + " OR ".join(
        f"EXISTS (SELECT 1 FROM {_quote(model._meta.db_table)} WHERE {_where(model, shape)})" for model, shape in shapes)


def exists_any(*checks: tuple[type[models.Model], dict]) -> bool:
    """Whether a row matches any of ``checks`` (``(model, where)`` each), in one statement."""
    db = _db()
    params = [p for model, where in checks for p in _where_params(model, where, db)]
    return bool(execute(db, _exists_any_sql(db.vendor, tuple((m, _shape(w)) for m, w in checks)), params,
                        fetch="one")[0])


@lru_cache(maxsize=64)
def _insert_sql(vendor: str, model: type[models.Model], ignore_conflicts: bool) -> str:
    fields = _concrete(model)
    sql = (f"INSERT INTO {_quote(model._meta.db_table)} ({', '.join(_quote(f.column) for f in fields)}) "
           f"VALUES ({', '.join(['%s'] * len(fields))})")
    return sql + " ON CONFLICT DO NOTHING" if ignore_conflicts else sql


def _insert_params(fields: tuple, row: dict, now, db) -> list:
    params = []
    append = params.append
    get = row.get
    for field, name, alt, stamped, absent, make, plain, key, prep in fields:
        value = get(name, _ABSENT)
        if value is _ABSENT:
            if alt is not None:
                value = get(alt, _ABSENT)
            if value is _ABSENT:
                value = now if stamped else absent if make is None else make()
        # _prep_save's first test, inlined: most columns hold plain values (ids, text, counts, keys)
        if plain is None:
            append(prep(field, value, db))
        elif value is None or (type(value) is plain and not (key and value == "")):
            append(value)
        else:
            append(_prep_save(field, value, db))
    return params


def insert(model: type[models.Model], rows: Iterable[dict], *, ignore_conflicts: bool = False) -> int:
    """Insert ``rows`` (``{field name: value}``; missing fields take their default, ``auto_now``
    and ``auto_now_add`` fields the current time). With ``ignore_conflicts``, a row that violates a
    unique constraint is skipped (``ON CONFLICT DO NOTHING``). Returns the number of rows inserted."""
    rows = list(rows)
    if not rows:
        return 0
    db = _db()
    fields = _insert_fields(model)
    now = timezone.now()
    sql = _insert_sql(db.vendor, model, ignore_conflicts)
    if len(rows) == 1:
        return execute(db, sql, _insert_params(fields, rows[0], now, db))
    return execute(db, sql, [_insert_params(fields, row, now, db) for row in rows], many=True)


@lru_cache(maxsize=32)
def _upsert_sql(vendor: str, model: type[models.Model], unique: tuple) -> str:
    fields = _concrete(model)
    sets = ", ".join(f"{_quote(f.column)} = EXCLUDED.{_quote(f.column)}" for f in fields if f.name not in unique)
    return (_insert_sql(vendor, model, False)
            + f" ON CONFLICT ({', '.join(_quote(model._meta.get_field(n).column) for n in unique)}) DO UPDATE SET {sets}")


def upsert(model: type[models.Model], row: dict, *, unique: tuple = ("id",)) -> None:
    """Insert ``row``, or update every other column of the row with the same ``unique`` fields."""
    db = _db()
    execute(db, _upsert_sql(db.vendor, model, tuple(unique)), _insert_params(_insert_fields(model), row, timezone.now(), db))


@lru_cache(maxsize=128)
def _update_sql(vendor: str, model: type[models.Model], columns: tuple, shape: tuple) -> str:
    sets = ", ".join(f"{_quote(model._meta.get_field(name).column)} = %s" for name in columns)
    return f"UPDATE {_quote(model._meta.db_table)} SET {sets} WHERE {_where(model, shape)}"


@lru_cache(maxsize=64)
def _auto_now(model: type[models.Model]) -> tuple:
    """The names of ``model``'s ``auto_now`` fields."""
    return tuple(f.name for f in model._meta.concrete_fields if getattr(f, "auto_now", False))


def update(model: type[models.Model], where: dict, values: dict) -> int:
    """Set ``values`` on the rows matching ``where``; ``auto_now`` fields not in ``values`` take the
    current time (as ``Model.save`` does). Returns the number of rows changed."""
    values = dict(values)
    for name in _auto_now(model):
        if name not in values:
            values[name] = timezone.now()
    db = _db()
    names = tuple(values)
    params = [_prep_save(field, value, db) for field, value in zip(_fields(model, names), values.values())]
    params += _where_params(model, where, db)
    return execute(db, _update_sql(db.vendor, model, names, _shape(where)), params)


@lru_cache(maxsize=256)
def _fields(model: type[models.Model], names: tuple) -> tuple:
    """The fields ``names`` of ``model``."""
    return tuple(model._meta.get_field(name) for name in names)


def _instance_values(instance: models.Model, fields: list, db) -> list:
    """The database values of ``instance``'s ``fields``, as the ORM would send them."""
    return [_prep_save(f, getattr(instance, f.attname), db) for f in fields]


@lru_cache(maxsize=64)
def _update_by_pk_sql(vendor: str, model: type[models.Model], names: tuple, shape: tuple = ()) -> str:
    sets = ", ".join(f"{_quote(model._meta.get_field(name).column)} = %s" for name in names)
    sql = f"UPDATE {_quote(model._meta.db_table)} SET {sets} WHERE {_quote(model._meta.pk.column)} = %s"
    return f"{sql} AND {_where(model, shape)}" if shape else sql


def update_instances(model: type[models.Model], instances: list, names: tuple, *, where: dict | None = None) -> int:
    """``UPDATE … SET names WHERE pk = …`` with each instance's values, and only where the row also
    matches ``where`` (``{field: value}``, the same for every row: a compare-and-set): one
    executemany (one round trip with psycopg 3's pipeline). Returns the number of rows changed."""
    if not instances:
        return 0
    db = _db()
    fields = [model._meta.get_field(name) for name in names]
    pk = model._meta.pk
    where = where or {}
    extra = _where_params(model, where, db)
    return execute(db, _update_by_pk_sql(db.vendor, model, tuple(names), _shape(where)),
                   [[*_instance_values(i, fields, db), pk.get_db_prep_value(i.pk, db), *extra] for i in instances],
                   many=True)


@lru_cache(maxsize=32)
def _insert_all_sql(vendor: str, model: type[models.Model]) -> str:
    fields = model._meta.concrete_fields
    return (f"INSERT INTO {_quote(model._meta.db_table)} ({', '.join(_quote(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})")


def insert_instances(model: type[models.Model], instances: list) -> None:
    """``INSERT`` complete, unsaved instances (every concrete field, the primary key included): one
    executemany of a one-row statement (one round trip with psycopg 3's pipeline; a short statement,
    so the driver parses it once, where a many-row one longer than 4 kB is parsed on every call)."""
    if not instances:
        return
    db = _db()
    fields = model._meta.concrete_fields
    execute(db, _insert_all_sql(db.vendor, model), [_instance_values(i, fields, db) for i in instances], many=True)
    for instance in instances:
        instance._state.adding = False


class StatementManager(models.Manager):
    """The default manager of the hot path's models, with this module's statements as methods
    (``ThreadLease.objects.select_row({"thread_key": key}, for_update=True)``): the ORM's queryset
    API for everything else. bench/signals.py (cases ``sql`` and ``sqlpg``) measures each statement
    against its ORM form; every one kept here is 1.8× to 10× faster."""

    def select_rows(self, where: dict, *, order_by: tuple = (), limit: int | None = None,
                    for_update: bool = False) -> list:
        return select(self.model, where, order_by=order_by, limit=limit, for_update=for_update)

    def select_row(self, where: dict, *, for_update: bool = False):
        return select_one(self.model, where, for_update=for_update)

    def select_values(self, names: tuple, where: dict, *, order_by: tuple = (), limit: int | None = None) -> list:
        return select_values(self.model, names, where, order_by=order_by, limit=limit)

    def row_exists(self, where: dict) -> bool:
        return exists(self.model, where)

    def row_count(self, where: dict) -> int:
        return count(self.model, where)

    def insert_rows(self, rows: Iterable[dict], *, ignore_conflicts: bool = False) -> int:
        return insert(self.model, rows, ignore_conflicts=ignore_conflicts)

    def update_rows(self, where: dict, values: dict) -> int:
        return update(self.model, where, values)

    def upsert_row(self, row: dict, *, unique: tuple = ("id",)) -> None:
        upsert(self.model, row, unique=unique)

    def update_instances(self, instances: list, names: tuple, *, where: dict | None = None) -> int:
        return update_instances(self.model, instances, names, where=where)

    def insert_instances(self, instances: list) -> None:
        insert_instances(self.model, instances)
