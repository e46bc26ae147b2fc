"""What a run is given from outside: the thread hooks, the processors' trip wire, callbacks.

A thread run gets its :class:`ThreadHooks` from the thread runtime when it is built (the runtime's
run factory, ``Agent.start_thread_stream`` by default, or a resumed approval); a run without hooks is a
plain run.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable


@dataclass(frozen=True)
class ThreadHooks:
    """The thread runtime's side of one thread run, given to the run when it is built.

    ``emit(chunk)`` gets every chunk of the run (the thread's stream; it may return an awaitable
    the run awaits, to let the event loop go round). ``take_inputs()`` takes the inputs delivered into the run since the last call, oldest first, as
    ``{"signal": <accepted signal>, "kind": "input" | "echo"}`` (``echo``: persisted into the history,
    not shown to the model); it returns ``[]`` once the run lost its lease.
    ``write_end(messages, record)`` writes the run's end in one go: its unsaved messages, its run record
    and the thread's lease (the run does not save memory or record itself then).
    ``finalize(result)`` is awaited once the run is over, before its output completes (the runtime
    ends a run that did not write its end, e.g. a suspended one, there).
    ``echoes`` are the echo chunks of the inputs the run answers, sent right after ``start``.
    """

    emit: Callable[[dict], Any]
    take_inputs: Callable[[], Awaitable[list[dict]]]
    write_end: Callable[[list[dict], dict], Awaitable[None]]
    finalize: Callable[[Any], Awaitable[None]]
    echoes: list[dict] = field(default_factory=list)


class TripWire(Exception):
    """Raised by a processor's ``abort(reason)`` to block the run (or retry the step)."""

    def __init__(self, reason: str, *, retry: bool = False, metadata: Any = None, processor_id: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry = retry
        self.metadata = metadata
        self.processor_id = processor_id

    def to_dict(self) -> dict:
        return {"reason": self.reason, "retry": self.retry, "metadata": self.metadata,
                "processorId": self.processor_id}


async def maybe_await(value: Any) -> Any:
    """``value``, awaited when it is awaitable (callbacks may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value
