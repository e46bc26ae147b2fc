"""State signal tracking on the thread row (the rules: ``agents.runtime.state_tracking``)."""

from __future__ import annotations

from datetime import datetime

from agents.models import Thread
from agents.runtime.state_tracking import apply_state_signal


def state_signal_record(thread: Thread, *, state: dict, signal: dict, now: datetime,
                        window_ids: list[str] | None = None) -> dict | None:
    """Apply one state signal to ``thread`` (locked by the caller, or serialised by its lease).

    ``state`` is ``{"id", "cache_key", "mode"}``; ``window_ids`` the ids of the signals in the
    context window of the run that computed it (None from outside a run). Returns None when the
    state is skipped (nothing written), else the signal with ``metadata.state.threadId`` and
    ``version``, after saving the new tracking on the thread."""
    applied = apply_state_signal(thread.metadata, state=state, signal=signal, thread_id=thread.thread_id,
                                 now_iso=now.isoformat(), window_ids=window_ids)
    if applied is None:
        return None
    recorded, thread.metadata = applied
    thread.save(update_fields=["metadata", "updated_at"])
    return recorded
