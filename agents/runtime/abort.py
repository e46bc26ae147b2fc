"""Cancellation, modelled on the web platform's ``AbortController`` / ``AbortSignal``."""

from __future__ import annotations

import asyncio
from typing import Any, Callable


class AbortSignal:
    """Read side of an :class:`AbortController`.

    ``aborted`` flips once; listeners run synchronously at that moment, in the order they were
    added. ``wait()`` lets a coroutine race its work against the abort.
    """

    __slots__ = ("aborted", "reason", "_listeners", "_event")

    def __init__(self) -> None:
        self.aborted = False
        self.reason: Any = None
        self._listeners: list[Callable[[Any], None]] = []
        self._event: asyncio.Event | None = None

    def add_listener(self, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Call ``callback(reason)`` on abort (at once if already aborted); returns a remover."""
        if self.aborted:
            callback(self.reason)
            return lambda: None
        self._listeners.append(callback)

        def remove() -> None:
            try:
                self._listeners.remove(callback)
            except ValueError:
                pass

        return remove

    async def wait(self) -> Any:
        if self.aborted:
            return self.reason
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()
        return self.reason

    def _fire(self, reason: Any) -> None:
        if self.aborted:
            return
        self.aborted = True
        self.reason = reason
        listeners, self._listeners = self._listeners, []
        for callback in listeners:
            callback(reason)
        if self._event is not None:
            self._event.set()

    @classmethod
    def any(cls, *signals: "AbortSignal | None") -> "AbortSignal":
        """A signal that aborts when any of ``signals`` does."""
        combined = cls()
        for signal in signals:
            if signal is not None:
                signal.add_listener(combined._fire)
        return combined


class AbortController:
    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = "aborted") -> None:
        self.signal._fire(reason)
