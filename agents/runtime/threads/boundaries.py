"""Whether a thread run reads its waiting inputs at a step boundary (docs/threads.md, "Delivery").

Most boundaries have no input waiting, and each read is a database round trip. An input accepted
for a run of this process marks its thread here; one accepted in another process is announced on
the thread's pub/sub channel and marks it when heard. A run reads when its thread is marked, and
wherever an input could have arrived unannounced (see :meth:`BoundaryReads.needed`). An input no
run heard of is not lost: the run's end hands it to the next run (the store's ``finish``).
"""

from __future__ import annotations

from typing import Awaitable, Callable, Container


class BoundaryReads:
    """The threads with an input waiting for their run in this process since the run last read.

    ``single_process``: no other process sends into this one's threads, so every input for a run
    here is accepted here. ``runs`` holds the threads this process runs; ``announce(key)`` tells
    the other processes (pub/sub, best effort); ``degraded()`` says whether pub/sub may be losing
    messages right now, or is None when there is no pub/sub."""

    def __init__(self, *, single_process: bool, runs: Container[str], announce: Callable[[str], Awaitable[None]],
                 degraded: Callable[[], bool] | None):
        self.single_process = single_process
        self.runs = runs
        self.announce = announce
        self.degraded = degraded
        self.marked: set[str] = set()

    async def accepted(self, key: str) -> None:
        """An input for the thread's active run was accepted in this process."""
        if key in self.runs or self.single_process:
            self.marked.add(key)
        else:
            await self.announce(key)

    def heard(self, key: str) -> None:
        """Another process announced an input for the thread's run."""
        if key in self.runs:
            self.marked.add(key)

    def forget(self, key: str) -> None:
        """The thread's run ends: an input accepted from now on is the end's to hand over."""
        self.marked.discard(key)

    def needed(self, key: str, *, first: bool, resumed: bool) -> bool:
        """Whether the thread's run reads at this boundary: when its thread is marked (the mark is
        used up), at the first boundary of a resumed run (inputs sent while it was suspended), and
        beside other processes at a run's first boundary (one could store an input before this
        process listens to the thread), at every boundary without pub/sub, and while pub/sub fails."""
        if key in self.marked:
            self.marked.discard(key)
            return True
        if first and resumed:
            return True
        if self.single_process:
            return False
        return first or self.degraded is None or self.degraded()


__all__ = ["BoundaryReads"]
