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
