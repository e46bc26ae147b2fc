"""State signal tracking, as Mastra keeps it on the thread (``applyStateSignal``).

``thread.metadata["mastra"]["stateSignals"][<state id>]`` is::

    {"currentCacheKey", "currentMode", "version", "lastSignalId", "lastSnapshotSignalId", "updatedAt",
     "activeCopies": [{"id", "cacheKey", "mode", "version"}]}

A state whose cache key and mode are the current ones *matches*. Sent from outside a run
(``send_state_signal``), a matching state is skipped (``unchanged``). Computed inside a run
(``compute_state_signal``, which knows the context window), it is skipped only while a copy of the
current state is still in the window; a matching state whose copy fell out of the window is sent
again with the same version. Any other state bumps the version. The accepted signal's
``metadata.state`` gains ``threadId`` and ``version``. Other keys of the thread's metadata (and of
its ``mastra`` entry) are kept. Pure functions: the stores apply them to their thread rows.
"""

from __future__ import annotations


def state_tracking(metadata: dict | None, state_id: str) -> dict | None:
    """The tracking entry of ``state_id`` in a thread's metadata, or None."""
    mastra = (metadata or {}).get("mastra")
    signals = mastra.get("stateSignals") if isinstance(mastra, dict) else None
    tracking = signals.get(state_id) if isinstance(signals, dict) else None
    return tracking if isinstance(tracking, dict) else None


def with_state_tracking(metadata: dict | None, state_id: str, tracking: dict) -> dict:
    """A copy of ``metadata`` with ``tracking`` under ``mastra.stateSignals.<state_id>``."""
    metadata = dict(metadata or {})
    mastra = dict(metadata["mastra"]) if isinstance(metadata.get("mastra"), dict) else {}
    signals = dict(mastra["stateSignals"]) if isinstance(mastra.get("stateSignals"), dict) else {}
    signals[state_id] = tracking
    mastra["stateSignals"] = signals
    metadata["mastra"] = mastra
    return metadata


def apply_state_signal(metadata: dict | None, *, state: dict, signal: dict, thread_id: str, now_iso: str,
                       window_ids: list[str] | None = None) -> tuple[dict, dict] | None:
    """Decide one state signal against the thread's tracking.

    ``state`` is ``{"id", "cache_key", "mode"}``; ``window_ids`` the ids of the signals in the run's
    context window (None from outside a run). Returns None when the state is skipped (nothing to
    write), else ``(recorded signal, new thread metadata)``."""
    state_id, cache_key, mode = state["id"], state["cache_key"], state["mode"]
    tracking = state_tracking(metadata, state_id)
    copies = (tracking or {}).get("activeCopies") or []
    has_active_copy = window_ids is not None and any(
        isinstance(c, dict) and c.get("id") in window_ids for c in copies)
    matches = bool(tracking) and tracking.get("currentCacheKey") == cache_key and (
        tracking.get("currentMode") == mode or (not tracking.get("currentMode") and has_active_copy))
    if matches and (window_ids is None or has_active_copy):
        return None
    previous = (tracking or {}).get("version")
    previous = previous if isinstance(previous, int) and not isinstance(previous, bool) else None
    version = (previous or 1) if matches else (previous or 0) + 1
    signal_metadata = dict(signal.get("metadata") or {})
    signal_metadata["state"] = {**(signal_metadata.get("state") or {}), "id": state_id, "cacheKey": cache_key,
                                "mode": mode, "threadId": thread_id, "version": version}
    recorded = {**signal, "metadata": signal_metadata}
    updated = {
        "currentCacheKey": cache_key, "currentMode": mode, "version": version, "lastSignalId": recorded["id"],
        "lastSnapshotSignalId": recorded["id"] if mode == "snapshot" else (tracking or {}).get("lastSnapshotSignalId"),
        "updatedAt": now_iso,
        "activeCopies": [{"id": recorded["id"], "cacheKey": cache_key, "mode": mode, "version": version}],
    }
    if updated["lastSnapshotSignalId"] is None:  # no snapshot yet: absent, as in Mastra
        del updated["lastSnapshotSignalId"]
    return recorded, with_state_tracking(metadata, state_id, updated)
