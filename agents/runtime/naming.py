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


@lru_cache(maxsize=1024)
def camel_case(name: str) -> str:
    """``max_steps`` → ``maxSteps``; a camelCase name is returned unchanged."""
    return _UNDERSCORE_LETTER.sub(lambda m: m.group(1).upper(), name)


def snake_keys(data: dict | None) -> dict:
    """A copy of ``data`` whose top-level string keys are snake_case. Values are left as they
    are (they can hold JSON Schemas or provider payloads whose keys must not change)."""
    return {(snake_case(k) if isinstance(k, str) else k): v for k, v in (data or {}).items()}


#: the camelCase of the keys :func:`camel_keys` met (a dict lookup is quicker than a cached call;
#: at most :data:`_CAMEL_KEYS_MAX`, the same few names come back on every call)
_camel_keys: dict = {}
_CAMEL_KEYS_MAX = 4096


def _camel_key(key: Any) -> Any:
    if not isinstance(key, str):  # left as it is, and not kept (1 and True are one dict key)
        return key
    camel = camel_case(key)
    if len(_camel_keys) < _CAMEL_KEYS_MAX:
        _camel_keys[key] = camel
    return camel


def camel_keys(data: dict | None) -> dict:
    """A copy of ``data`` whose top-level string keys are camelCase; values unchanged."""
    known = _camel_keys
    return {(known.get(k) or _camel_key(k)): v for k, v in (data or {}).items()}


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
