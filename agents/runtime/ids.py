"""Ids given by callers (resource, thread, agent, run, signal): strings without control characters,
no longer than the column that stores them.

A thread is named by its resource id and thread id together (``threads.thread_key`` joins them with
``\\x1f``): a control character in either would let two different pairs name one thread, so every
id is refused with one (code ``invalid_id``) before anything is stored.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import MastraError, SignalError

#: the longest id of each kind (the database columns that store them)
MAX_RESOURCE_ID = 255
MAX_THREAD_ID = 255
MAX_AGENT_ID = 255
MAX_RUN_ID = 64
MAX_SIGNAL_ID = 64

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def id_problem(value: Any, max_length: int) -> str | None:
    """Why ``value`` is not a valid id (a short phrase), or None when it is one."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if len(value) > max_length:
        return f"must be at most {max_length} characters"
    if _CONTROL.search(value):
        return "must not contain control characters"
    return None


def id_check(value: Any, name: str, max_length: int, *, error: type[MastraError] = SignalError) -> str:
    """``value`` when it is a valid id, else ``error`` (code ``invalid_id``) naming ``name``.

    ``error`` is :class:`SignalError` (the default) or ``AgentConfigError`` (whose first argument is
    the field)."""
    problem = id_problem(value, max_length)
    if problem is None:
        return value
    if error is SignalError:
        raise SignalError(f"{name} {problem}", code="invalid_id")
    raise error(name, problem, code="invalid_id")
