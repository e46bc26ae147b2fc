"""Key spelling: Mastra's camelCase and this project's snake_case.

Every public call accepts both spellings (``maxSteps`` and ``max_steps``); the wire formats Mastra
defines (chunks, results, signals) are camelCase. This module is the one place that converts; the
conversions are cached because the same few names are converted on every call.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .errors import AgentConfigError

_UPPER_AFTER_WORD = re.compile(r"(?<=[a-z0-9])([A-Z])")
_UNDERSCORE_LETTER = re.compile(r"_([a-z0-9])")


@lru_cache(maxsize=1024)
def snake_case(name: str) -> str:
    """``maxSteps`` → ``max_steps``; a snake_case name is returned unchanged."""
    return _UPPER_AFTER_WORD.sub(r"_\1", name).lower()


#: the camelCase of the names :func:`camel_case` met (a dict, not ``lru_cache``: :func:`camel_keys`
#: looks names up in it directly, quicker than a call per key); at most :data:`_CAMEL_MAX` names
_camel: dict[str, str] = {}
_CAMEL_MAX = 4096


def camel_case(name: str) -> str:
    """``max_steps`` → ``maxSteps``; a camelCase name is returned unchanged."""
    camel = _camel.get(name)
    if camel is None:
        camel = _UNDERSCORE_LETTER.sub(lambda m: m.group(1).upper(), name)
        if len(_camel) < _CAMEL_MAX:
            _camel[name] = camel
    return camel


def snake_keys(data: dict | None) -> dict:
    """A copy of ``data`` whose top-level string keys are snake_case. Values are left as they
    are (they can hold JSON Schemas or provider payloads whose keys must not change)."""
    return {(snake_case(k) if isinstance(k, str) else k): v for k, v in (data or {}).items()}


def camel_keys(data: dict | None) -> dict:
    """A copy of ``data`` whose top-level string keys are camelCase; values unchanged (other keys
    too: only strings are ever kept in the names met, so ``1`` or ``True`` finds none)."""
    known = _camel
    return {(known.get(k) or (camel_case(k) if isinstance(k, str) else k)): v for k, v in (data or {}).items()}


def option_dict(value: Any, field: str, keys: frozenset | set, *, expected: str = "must be a dict",
                unknown: str = "unknown key") -> dict:
    """``value`` as a snake_case dict of known ``keys``; else ``AgentConfigError`` naming ``field``
    (``expected`` when it is not a dict, ``unknown`` with the first unknown key's path)."""
    if not isinstance(value, dict):
        raise AgentConfigError(field, expected)
    value = snake_keys(value)
    bad = set(value) - keys
    if bad:
        raise AgentConfigError(f"{field}.{sorted(bad)[0]}", unknown)
    return value
