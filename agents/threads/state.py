"""State signal tracking on the thread row, as Mastra keeps it.

``thread.metadata["mastra"]["stateSignals"][<state id>]`` is::

    {"currentCacheKey", "currentMode", "version", "lastSignalId", "lastSnapshotSignalId", "updatedAt",
     "activeCopies": [{"id", "cacheKey", "mode", "version"}]}

A state signal whose cache key and mode are the current ones is skipped (``unchanged``); any other
one bumps the version, and its signal's ``metadata.state`` gains ``threadId`` and ``version``.
Other keys of the thread's metadata (and of its ``mastra`` entry) are kept.
"""

from __future__ import annotations

from datetime import datetime

from agents.models import Thread


def state_tracking_get(metadata: dict | None, state_id: str) -> dict | None:
    """The tracking entry of ``state_id`` in a thread's metadata, or None."""
    mastra = (metadata or {}).get("mastra")
    signals = mastra.get("stateSignals") if isinstance(mastra, dict) else None
    tracking = signals.get(state_id) if isinstance(signals, dict) else None
    return tracking if isinstance(tracking, dict) else None


def state_is_current(tracking: dict | None, *, cache_key: str, mode: str) -> bool:
    """Whether a state with ``cache_key`` and ``mode`` is the one the tracking holds."""
    return bool(tracking) and tracking.get("currentCacheKey") == cache_key and tracking.get("currentMode") == mode


def state_metadata_set(metadata: dict | None, state_id: str, tracking: dict) -> dict:
    """A copy of ``metadata`` with ``tracking`` under ``mastra.stateSignals.<state_id>``."""
    metadata = dict(metadata or {})
    mastra = dict(metadata["mastra"]) if isinstance(metadata.get("mastra"), dict) else {}
    signals = dict(mastra["stateSignals"]) if isinstance(mastra.get("stateSignals"), dict) else {}
    signals[state_id] = tracking
    mastra["stateSignals"] = signals
    metadata["mastra"] = mastra
    return metadata


def state_signal_record(thread: Thread, *, state: dict, signal: dict, now: datetime) -> dict | None:
    """Apply one state signal to ``thread`` (locked by the caller, or serialised by its lease).

    ``state`` is ``{"id", "cache_key", "mode"}``. Returns None when the state is current (skipped,
    nothing written), else the signal with ``metadata.state.threadId`` and ``version``, after
    saving the new tracking on the thread."""
    state_id, cache_key, mode = state["id"], state["cache_key"], state["mode"]
    tracking = state_tracking_get(thread.metadata, state_id)
    if state_is_current(tracking, cache_key=cache_key, mode=mode):
        return None
    previous = tracking.get("version") if tracking else None
    version = (previous if isinstance(previous, int) and not isinstance(previous, bool) else 0) + 1
    metadata = dict(signal.get("metadata") or {})
    metadata["state"] = {**(metadata.get("state") or {}), "id": state_id, "cacheKey": cache_key, "mode": mode,
                         "threadId": thread.id, "version": version}
    recorded = {**signal, "metadata": metadata}
    updated = {
        "currentCacheKey": cache_key, "currentMode": mode, "version": version, "lastSignalId": recorded["id"],
        "lastSnapshotSignalId": recorded["id"] if mode == "snapshot" else (tracking or {}).get("lastSnapshotSignalId"),
        "updatedAt": now.isoformat(),
        "activeCopies": [{"id": recorded["id"], "cacheKey": cache_key, "mode": mode, "version": version}],
    }
    if updated["lastSnapshotSignalId"] is None:  # no snapshot yet: absent, as in Mastra
        del updated["lastSnapshotSignalId"]
    thread.metadata = state_metadata_set(thread.metadata, state_id, updated)
    thread.save(update_fields=["metadata", "updated_at"])
    return recorded
