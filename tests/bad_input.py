"""Hypothesis strategies for input that no route may answer with a 5xx (docs/security.md, "Bad
input"): JSON nested too deep, strings with lone surrogates, NUL, control characters or too many
characters, numerals ``int()`` refuses or misreads (``²``, ``١٢``, 5,000 digits), NaN and
Infinity, and values of the wrong type for every field.

Bodies are built as JSON *text* (:func:`encode`), not with ``json.dumps``: Python cannot write a
5,000-digit integer or a lone surrogate as UTF-8, and a client can send both. Used by the fuzz
tests of the HTTP API, the webhooks and the chat websocket (SQLite and PostgreSQL alike).
"""

from __future__ import annotations

import json
from urllib.parse import quote

from hypothesis import strategies as st

__all__ = ["Raw", "SHAPES", "check_error_body", "encode", "field_values", "json_bodies", "numerals",
           "odd_strings", "odd_values", "query_strings", "shaped_body", "url_part"]


class Raw(str):
    """JSON text written as it is (a numeral ``json.dumps`` cannot write, a deeply nested value)."""


def encode(value) -> str:
    """``value`` as JSON text; strings are ``\\u``-escaped (a lone surrogate survives as
    ``\\ud800``), :class:`Raw` pieces are written verbatim."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode(str(k))}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode(v) for v in value) + "]"
    return json.dumps(value)  # ensure_ascii: every non-ASCII character, surrogates included, as \uXXXX


def nested(depth: int, *, kind: str = "object") -> Raw:
    if kind == "list":
        return Raw("[" * depth + "1" + "]" * depth)
    return Raw('{"a":' * depth + "1" + "}" * depth)


#: strings a database cannot store, or a field cannot take
ODD_STRINGS = ["\ud800", "a\udfffb", "\udc00\ud800", "\x00", "a\x00b", "\x01\x1f\x7f\x9f", "\u2028\u2029",
               "\ufeff", "²", "١٢", "-1", "1.5", "1e3", "0x1f", " 7 ", "", " ", "x" * 256, "é" * 300,
               "9" * 5000, "<tag>&\"'", "null", "true"]
#: numerals as text, for query strings and headers
NUMERALS = ["²", "١٢", "٣", "1" * 5000, "9" * 20, "-1", "-0", "+3", "1.5", "1e3", "0x10", "1_000", " ", "NaN",
            "Infinity", "0", "7"]
#: numbers as JSON text
ODD_NUMBERS = [Raw("9" * 5000), Raw("-" + "9" * 5000), Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"),
               Raw("-1e400"), Raw("1e-400"), Raw("-0"), Raw("1.0"), Raw(str(2 ** 64)), Raw(str(-(2 ** 63) - 1))]


def odd_strings() -> st.SearchStrategy[str]:
    """Strings with lone surrogates, NUL, control characters, odd digits, many characters."""
    every_character = st.characters(codec=None, exclude_categories=())  # surrogates (Cs) included
    return st.one_of(st.sampled_from(ODD_STRINGS), st.text(every_character, max_size=12),
                     st.text(st.sampled_from("\x00\ud800x\n"), min_size=1, max_size=6))


def numerals() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(NUMERALS), st.integers(-(2 ** 70), 2 ** 70).map(str))


def odd_scalars() -> st.SearchStrategy:
    return st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
                     st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(ODD_NUMBERS), odd_strings())


def odd_values() -> st.SearchStrategy:
    """Any JSON-ish value of any type: scalars, small lists and objects (with odd keys too)."""
    return st.recursive(odd_scalars(), lambda children: st.lists(children, max_size=3)
                        | st.dictionaries(odd_strings(), children, max_size=3), max_leaves=6)


def deep_values() -> st.SearchStrategy[Raw]:
    """Arrays or objects nested past the limit (65 levels) up to far past Python's recursion limit."""
    return st.builds(nested, st.sampled_from([65, 200, 1500, 100_000]), kind=st.sampled_from(["object", "list"]))


def field_values() -> st.SearchStrategy:
    return st.one_of(odd_values(), deep_values())


def as_strategy(value) -> st.SearchStrategy:
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


def json_bodies(good: dict) -> st.SearchStrategy[bytes]:
    """A request body: an object whose fields (the keys of ``good``, and odd extra keys) each hold a
    good value (``good[name]``, a value or a strategy) or an odd one; or a body that is not an
    object, not JSON, or nested too deep."""
    fields = st.fixed_dictionaries({}, optional={name: st.one_of(as_strategy(value), field_values())
                                                 for name, value in good.items()})
    extra = st.dictionaries(odd_strings(), odd_values(), max_size=2)
    objects = st.builds(lambda a, b: {**b, **a}, fields, extra).map(encode)
    other = st.one_of(field_values().map(encode), st.sampled_from(["", "{", "[1,", "nul\x00", '"\\ud800"', "{}"]),
                      deep_values().map(str))
    return st.one_of(objects, objects, objects, other).map(lambda text: text.encode("utf-8", "surrogatepass"))


#: one value per shape of docs/security.md "Bad input", for explicit examples on every database
SHAPES = {
    "nul": "a\x00b",
    "surrogate": "a\ud800b",
    "long": "x" * 300,
    "deep": nested(200),
    "numeral": "²",
    "huge": Raw("9" * 5000),
    "nan": Raw("NaN"),
    "object": {"n": {}},
}


def shaped_body(good: dict, shape: str) -> bytes:
    """``good`` with every field replaced by the value of ``shape`` (one field at a time would
    stop at the first field a route checks; all of them reach the body-wide checks)."""
    value = SHAPES[shape]
    return encode({name: value for name in good}).encode("utf-8", "surrogatepass")


def query_strings(names: list[str]) -> st.SearchStrategy[str]:
    """A query string (``?a=1&b=²``) with some of ``names`` set to odd text or numerals, percent-
    encoded as a browser would (lone surrogates as the bytes Python's ``surrogatepass`` writes)."""
    values = st.one_of(odd_strings(), numerals())
    params = st.dictionaries(st.sampled_from(names) | odd_strings(), values, max_size=4)
    return params.map(lambda p: "?" + "&".join(f"{url_part(k)}={url_part(v)}" for k, v in p.items()))


def url_part(text: str) -> str:
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def check_error_body(status: int, content: bytes, context) -> None:
    """A response to bad input: never a 5xx, and an error is JSON with a stable ``code``."""
    assert status < 500, (status, content[:300], context)
    if status >= 400:
        answer = json.loads(content)
        assert isinstance(answer.get("code"), str) and answer["code"] != "internal_error", (answer, context)
