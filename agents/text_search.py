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
"""

from __future__ import annotations

import re

from django.db.models import CharField, Func, JSONField, Lookup, TextField
from django.db.models.lookups import Contains

#: the SQL name of :func:`fold` on SQLite connections
FOLD_FUNCTION = "mastra_fold"

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


for _field in (CharField, TextField, JSONField):
    _field.register_lookup(IContainsFolded)


def register_sqlite_functions(sender, connection, **kwargs) -> None:
    """``connection_created`` receiver: gives a new SQLite connection :func:`fold`."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(FOLD_FUNCTION, 1, fold, deterministic=True)
