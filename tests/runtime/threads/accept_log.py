"""A thread store's acceptances, recorded: which began and ended in which order, and how many ran
at once (the admission tests, on the in-memory store and on the database)."""

from __future__ import annotations

import asyncio


class AcceptLog:
    """What a store's ``accept`` did: ``("in" | "out", thread id)`` in order, and the most at once."""

    def __init__(self):
        self.steps: list[tuple[str, str]] = []
        self.inside = 0
        self.most = 0

    def began(self) -> list[str]:
        return [thread_id for step, thread_id in self.steps if step == "in"]


def record_accepts(store, *, pause: float = 0.0) -> AcceptLog:
    """Wrap ``store.accept`` to record it; each waits ``pause`` s first, so that acceptances the
    gate lets through together overlap even on a store that never waits."""
    log = AcceptLog()
    accept = store.accept

    async def recorded(**kwargs):
        log.steps.append(("in", kwargs["thread_id"]))
        log.inside += 1
        log.most = max(log.most, log.inside)
        try:
            if pause:
                await asyncio.sleep(pause)
            return await accept(**kwargs)
        finally:
            log.inside -= 1
            log.steps.append(("out", kwargs["thread_id"]))
    store.accept = recorded
    return log
