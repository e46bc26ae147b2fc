"""JSON text from outside (HTTP bodies, websocket frames, webhook deliveries) decoded into values
every part of the site can handle and every database can store.

:func:`json_decode` refuses, before anything acts on the value:

- JSON that is not JSON, or not strict JSON: ``NaN``, ``Infinity``, a number too large for a float
  (``1e400``) or an integer of more than 4,300 digits (code ``invalid_json``);
- arrays and objects nested deeper than :data:`MAX_JSON_DEPTH` (``invalid_json``): Python's
  parser and every recursive walk after it (case conversion, validation, the database's JSON
  encoder) would run out of stack, and no caller needs the depth;
- a string or key holding a lone surrogate (``\\ud800`` without its pair: it has no UTF-8 form,
  so no database can store it) or a NUL character (PostgreSQL's ``text`` and ``jsonb`` refuse it;
  SQLite would store it, so the rule is the same on both) (``invalid_text``).

:func:`text_check` applies the string rule to text that did not come through JSON (query strings,
URL parts). Pure functions; no I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import MastraError

#: how deep arrays and objects may nest (a message's parts with their provider options need < 10)
MAX_JSON_DEPTH = 64

#: the characters no stored text may hold: NUL and the UTF-16 surrogates (a pair decodes to one
#: character, so any surrogate left in a decoded string is a lone one)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class InputError(MastraError):
    """Text from outside that is not JSON the site accepts (``invalid_json``) or holds a character
    no database can store (``invalid_text``)."""

    code = "invalid_json"


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored (a short phrase), or None."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "holds a NUL character"
    return f"holds a lone surrogate (\\u{ord(found.group()):04x}), which has no UTF-8 form"


def text_check(value: str, where: str) -> str:
    """``value`` when it can be stored; else :class:`InputError` ``invalid_text`` naming ``where``."""
    problem = text_problem(value)
    if problem is not None:
        raise InputError(f"{where} {problem}", code="invalid_text")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is too large")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_value(value: Any, what: str) -> None:
    """Walk ``value`` without recursion: the depth, then every string and key."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            text_check(item, f"{what}: a string")
        elif isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise InputError(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels", code="invalid_json")
            if isinstance(item, dict):
                for key, child in item.items():
                    text_check(key, f"{what}: a key")
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)


def json_decode(text: str | bytes, *, what: str = "the body") -> Any:
    """The value of ``text`` (UTF-8 bytes or a string) under the rules of this module; raises
    :class:`InputError` with code ``invalid_json`` or ``invalid_text`` and a message naming ``what``."""
    try:
        value = json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError:
        raise InputError(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels", code="invalid_json") from None
    except (ValueError, UnicodeDecodeError) as exc:
        # UnicodeDecodeError is a ValueError; its message quotes bytes, not the caller's text
        raise InputError(f"{what} is not valid JSON: {exc}", code="invalid_json") from None
    _check_value(value, what)
    return value
