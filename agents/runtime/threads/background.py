"""The background tasks of a thread runtime (event flushes, pub/sub unsubscribes), kept referenced
until they end, and the wait for them (and for the runtime's runs) at shutdown or in tests."""

from __future__ import annotations

import asyncio
from typing import Callable, Collection


class BackgroundTasks:
    """Tasks started with :meth:`spawn`; :meth:`drain` waits for them and for ``runs`` (the
    runtime's active runs) to end."""

    def __init__(self, runs: Collection):
        self.runs = runs
        self.tasks: set[asyncio.Task] = set()

    def spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def is_idle(self) -> bool:
        return not self.tasks and not self.runs

    def busy_with(self, describe_run: Callable[[object], str]) -> list[str]:
        return [describe_run(run) for run in self.runs] + [f"task {task.get_coro()!r}" for task in self.tasks]

    async def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True when nothing is left, False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.is_idle():
            left = deadline - loop.time()
            if left <= 0:
                return False
            tasks = list(self.tasks)
            if tasks:
                await asyncio.wait(tasks, timeout=left)
            else:
                await asyncio.sleep(min(0.005, left))
        return True


__all__ = ["BackgroundTasks"]
