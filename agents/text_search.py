"""Case-insensitive search of stored text that folds every alphabet, on both databases.

Django's ``icontains`` folds case on PostgreSQL (``UPPER``; a JSON column is compared as its text,
escapes decoded), but on SQLite only for ASCII letters (``LIKE``), and SQLite keeps a JSON column
as it was written: every character outside ASCII as a ``\\uXXXX`` escape (Django's encoder and
:mod:`agents.json_text` both write so). On the embedded default a search for ``café`` thus found
no stored message, and ``DÉPLOIEMENT`` no title ``Déploiement``.

The lookup ``icontains_folded`` (on text, char and JSON fields; in filters and in the admin's
``search_fields``) is the field's own ``icontains`` where that holds (PostgreSQL, or a query of
ASCII only), and on SQLite, for a query with other characters, compares both sides folded by
:func:`fold` (JSON escapes decoded, then ``str.casefold``): a function every SQLite connection is
given when it opens (:func:`register_sqlite_functions`, on ``connection_created``).

What was said in a thread is stored as JSON: a message's ``content`` (its ``parts``), an accepted
input's ``signal`` (its ``contents``: a string, or parts). Searched as text, that JSON matched its
keys (``format``, ``parts``), part types (``text``), tool calls, a signal's tag, id, attributes and
times: every thread was found by ``text`` or by the year. The lookups ``parts_icontains`` (a
message's content) and ``contents_icontains`` (a signal) match the text parts only, what the chat's
preview shows, case-insensitively in every alphabet: on PostgreSQL ``UPPER`` of each part's text,
as ``icontains``; on SQLite, each part's text read with ``json_each`` and ``json_extract`` (escapes
decoded), compared by ``LIKE`` for a query of ASCII and through :func:`casefold` for another.
``%`` and ``_`` in the query are the characters they are.
"""

from __future__ import annotations

import re

from django.db.models import CharField, Func, JSONField, Lookup, TextField
from django.db.models.lookups import Contains

#: the SQL name of :func:`fold` on SQLite connections
FOLD_FUNCTION = "mastra_fold"
#: the SQL name of :func:`casefold` on SQLite connections
CASEFOLD_FUNCTION = "mastra_casefold"

# one escape at a time, left to right: ``\\`` (an escaped backslash) is kept whole, so the text
# ``\u00e9`` typed by someone (stored as ``\\u00e9``) stays as typed
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _unescape(match: re.Match) -> str:
    code = match.group(1)
    return chr(int(code, 16)) if code else match.group(0)


def fold(text: str | None) -> str | None:
    """``text`` with its ``\\uXXXX`` escapes decoded (a surrogate pair as its one character) and
    case folded; None stays None (and a number, SQLite's other kind of value, is read as its text)."""
    if text is None:
        return None
    if not isinstance(text, str):
        text = str(text)
    if "\\u" in text:
        text = _ESCAPE.sub(_unescape, text)
        if _SURROGATE.search(text):
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text.casefold()


class Folded(Func):
    """:func:`fold` of a column, on SQLite."""

    function = FOLD_FUNCTION
    output_field = TextField()


class IContainsFolded(Lookup):
    """``field__icontains_folded=query``: the field holds ``query``, case-insensitively in every
    alphabet (the module's docstring)."""

    lookup_name = "icontains_folded"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        query = self.rhs
        if connection.vendor == "sqlite" and isinstance(query, str) and not query.isascii():
            lookup = Contains(Folded(self.lhs), fold(query))
        else:
            lookup = self.lhs.output_field.get_lookup("icontains")(self.lhs, query)
        return compiler.compile(lookup)


def casefold(text: str | None) -> str | None:
    """``str.casefold`` of a text already decoded (a part's text read by ``json_extract``)."""
    if text is None:
        return None
    return (text if isinstance(text, str) else str(text)).casefold()


class TextPartsIContains(Lookup):
    """``<json field>__parts_icontains=query``: one of the text parts under the key ``parts`` holds
    ``query`` (the module's docstring); ``contents_icontains``: under ``contents``, which may also
    be one string."""

    lookup_name = "parts_icontains"
    key = "parts"
    prepare_rhs = False

    def _pattern(self, connection, query: str) -> str:
        return f"%{connection.ops.prep_for_like_query(query)}%"

    def as_sql(self, compiler, connection):  # another database: the JSON's text, as before
        return compiler.compile(IContainsFolded(self.lhs, self.rhs))

    def as_sqlite(self, compiler, connection):
        column, params = compiler.compile(self.lhs)
        query = str(self.rhs)
        text = ("CASE part.type WHEN 'text' THEN part.value WHEN 'object' THEN CASE WHEN "
                "json_extract(part.value, '$.type') = 'text' THEN json_extract(part.value, '$.text') END END")
        if not query.isascii():  # LIKE folds ASCII letters only
            text, query = f"{CASEFOLD_FUNCTION}({text})", casefold(query)
        sql = (f"EXISTS (SELECT 1 FROM json_each({column}, '$.{self.key}') AS part "
               f"WHERE {text} LIKE %s ESCAPE '\\')")
        return sql, [*params, self._pattern(connection, query)]

    def as_postgresql(self, compiler, connection):
        column, params = compiler.compile(self.lhs)
        value = f"({column} -> '{self.key}')"
        elements = (f"CASE jsonb_typeof({value}) WHEN 'array' THEN {value} WHEN 'string' THEN "
                    f"jsonb_build_array({value}) ELSE '[]'::jsonb END")
        text = ("CASE jsonb_typeof(part.value) WHEN 'string' THEN part.value #>> '{}' WHEN 'object' THEN "
                "CASE WHEN part.value ->> 'type' = 'text' THEN part.value ->> 'text' END END")
        sql = (f"EXISTS (SELECT 1 FROM jsonb_array_elements({elements}) AS part(value) "
               f"WHERE UPPER({text}) LIKE UPPER(%s))")
        return sql, [*params, *params, *params, self._pattern(connection, str(self.rhs))]


class TextContentsIContains(TextPartsIContains):
    lookup_name = "contents_icontains"
    key = "contents"


for _field in (CharField, TextField, JSONField):
    _field.register_lookup(IContainsFolded)
JSONField.register_lookup(TextPartsIContains)
JSONField.register_lookup(TextContentsIContains)


def register_sqlite_functions(sender, connection, **kwargs) -> None:
    """``connection_created`` receiver: gives a new SQLite connection :func:`fold` and :func:`casefold`."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(FOLD_FUNCTION, 1, fold, deterministic=True)
        connection.connection.create_function(CASEFOLD_FUNCTION, 1, casefold, deterministic=True)
