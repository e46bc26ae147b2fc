"""The chunk envelope every stream carries (Mastra's ``ChunkType``).

A chunk is ``{"type", "runId", "from": "AGENT", "payload"}``; data parts (signal echoes) carry
``data`` and ``transient`` instead of ``payload``. Build them here so that the envelope is spelled
once.
"""

from __future__ import annotations

from typing import Any

FROM_AGENT = "AGENT"


def chunk(type_: str, run_id: str | None, payload: dict | None = None) -> dict:
    """One agent chunk: ``{"type", "runId", "from": "AGENT", "payload"}`` (``payload`` ``{}`` when
    not given)."""
    return {"type": type_, "runId": run_id, "from": FROM_AGENT, "payload": {} if payload is None else payload}


def data_chunk(type_: str, run_id: str | None, data: Any, *, transient: bool = True) -> dict:
    """A data part (``data-user-message``, ``data-signal``, ``data-…``): ``data`` instead of
    ``payload``; ``transient`` parts are streamed and never stored as messages."""
    out = {"type": type_, "runId": run_id, "from": FROM_AGENT, "data": data}
    if transient:
        out["transient"] = True
    return out


ZERO_USAGE = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}


def persist_run_chunks(echo: dict, run_id: str) -> list[dict]:
    """The short run subscribers see for an input persisted on an idle thread: ``start``, its echo,
    ``finish``."""
    return [chunk("start", run_id), echo,
            chunk("finish", run_id, {"stepResult": {"reason": "stop"}, "output": {"usage": dict(ZERO_USAGE)}})]


def abort_chunk(run_id: str, seq: int) -> dict:
    """The ``abort`` a thread's log ends an aborted run with (its owner being elsewhere or gone)."""
    return {**chunk("abort", run_id, {"reason": "aborted"}), "seq": seq}


def snapshot_chunk(*, thread_id: str, resource_id: str, messages: list[dict], seq: int) -> dict:
    """What a subscriber resuming from before the kept events gets first: the thread's messages."""
    return {**data_chunk("data-thread-snapshot", None, {"threadId": thread_id, "resourceId": resource_id,
                                                        "messages": messages}), "seq": seq}
