"""Bookkeeping written off the caller's path, in batches: a bounded queue and one background thread
(the semantics of OpenTelemetry's ``BatchSpanProcessor``).

:meth:`BatchWriter.submit` only appends to the queue (no I/O, no thread hop, no await: it is safe
on the event loop). The writer's thread hands the queued items to ``write(items)`` in batches of at
most ``max_batch`` items: every ``interval_s`` seconds, at once when ``max_batch`` items wait, on
:meth:`BatchWriter.flush` and on :meth:`BatchWriter.shutdown` (registered with ``atexit``, so a
clean exit writes everything submitted before it). A full queue (``max_queue`` items) drops the new
item and counts it; nothing else is lost silently:

- a ``write`` that raises is logged as an error with its traceback, its items are counted as
  failed, and ``on_failure(items, error)`` gets them (the ledger keeps them in a table of failed
  writes, visible on the dashboard, from which they can be written again);
- drops are logged (the first, then every 1,000th) and reported to ``on_drop(count)`` from the
  writer's thread after its next batch.

``on_idle()`` is called on the writer's thread when a batch leaves the queue empty, and when the
thread stops (the stores close their connection there: kept while batches follow one another under
load, closed once the writer has nothing to do).

``stats()`` gives the counters: submitted, written, failed, dropped, queued, batches, failed batches,
the last error. A process forked after items were queued (a prefork worker) starts with an empty
queue and a thread of its own: the parent writes its own items.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

#: a drop is logged the first time and then once every this many
DROP_LOG_EVERY = 1000

_writers: "weakref.WeakSet[BatchWriter]" = weakref.WeakSet()


class BatchWriter:
    """See the module docstring. ``write`` runs on the writer's thread only, one batch at a time."""

    def __init__(self, name: str, write: Callable[[list], Any], *, max_queue: int = 8192, max_batch: int = 512,
                 interval_s: float = 1.0, on_failure: Callable[[list, BaseException], Any] | None = None,
                 on_drop: Callable[[int], Any] | None = None, on_idle: Callable[[], Any] | None = None):
        if max_queue < 1 or max_batch < 1 or interval_s <= 0:
            raise ValueError("max_queue and max_batch must be at least 1, interval_s above 0")
        self.name = name
        self.write = write
        self.max_queue = max_queue
        self.max_batch = min(max_batch, max_queue)
        self.interval_s = interval_s
        self.on_failure = on_failure
        self.on_drop = on_drop
        self.on_idle = on_idle
        self._reset()
        _writers.add(self)

    def _reset(self) -> None:
        # the caller's side takes the lock itself (a C call; the condition's ``with`` is Python code)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque = deque()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._flush_asked = 0  # items submitted up to a flush's call: written before it returns
        self.submitted = self.written = self.failed = self.dropped = 0
        self.batches = self.failed_batches = 0
        self.last_error: str = ""
        self.last_error_at: float | None = None
        self._done = 0  # items handled (written or failed), in submission order
        self._drops_reported = 0

    # -- the caller's side ---------------------------------------------------------------------
    def submit(self, item: Any) -> bool:
        """Queue ``item``; False when it was dropped (queue full, or the writer shut down)."""
        with self._lock:
            if self._closed or len(self._queue) >= self.max_queue:
                self.dropped += 1
                dropped = self.dropped
            else:
                self._queue.append(item)
                self.submitted += 1
                if self._thread is None:
                    self._start()
                if len(self._queue) >= self.max_batch:
                    self._cond.notify_all()
                return True
        if dropped == 1 or dropped % DROP_LOG_EVERY == 0:
            logger.warning("%s: queue full (%d items) or closed, %d item(s) dropped so far", self.name,
                           self.max_queue, dropped)
        return False

    def flush(self, timeout: float | None = None) -> bool:
        """Write everything submitted so far; True once written (or failed), False on timeout."""
        with self._cond:
            target = self.submitted
            if self._done >= target:
                return True
            self._flush_asked = max(self._flush_asked, target)
            self._cond.notify_all()
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._done < target:
                if self._thread is None or not self._thread.is_alive():
                    return False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def shutdown(self, timeout: float | None = 30.0) -> bool:
        """Write what is queued, then stop the thread; later submissions are dropped."""
        with self._cond:
            if self._closed:
                return True
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def stats(self) -> dict:
        with self._cond:
            return {"name": self.name, "submitted": self.submitted, "written": self.written, "failed": self.failed,
                    "dropped": self.dropped, "queued": len(self._queue), "batches": self.batches,
                    "failedBatches": self.failed_batches, "lastError": self.last_error,
                    "lastErrorAt": self.last_error_at}

    # -- the writer's thread -------------------------------------------------------------------
    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"batch-writer-{self.name}", daemon=True)
        self._thread.start()

    def _take(self) -> list | None:
        """The next batch, waiting for one to be due; None once closed and empty."""
        with self._cond:
            deadline = time.monotonic() + self.interval_s
            while True:
                queued = len(self._queue)
                due = (queued >= self.max_batch or self._closed
                       or (queued and self._flush_asked > self._done)
                       or (queued and time.monotonic() >= deadline))
                if due:
                    break
                self._cond.wait(max(deadline - time.monotonic(), 0.001) if queued else self.interval_s)
                if not self._queue:
                    deadline = time.monotonic() + self.interval_s
            if not self._queue:
                return None  # closed and empty
            return [self._queue.popleft() for _ in range(min(self.max_batch, len(self._queue)))]

    def _run(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                self._call(self.on_idle)
                return
            error: BaseException | None = None
            try:
                self.write(batch)
            except Exception as exc:  # noqa: BLE001 - logged, counted and handed to on_failure
                error = exc
                logger.error("%s: writing a batch of %d item(s) failed", self.name, len(batch), exc_info=True)
            with self._cond:
                self.batches += 1
                if error is None:
                    self.written += len(batch)
                else:
                    self.failed += len(batch)
                    self.failed_batches += 1
                    self.last_error = f"{type(error).__name__}: {error}"[:500]
                    self.last_error_at = time.time()
                new_drops = self.dropped - self._drops_reported
                self._drops_reported = self.dropped
                idle = not self._queue
            if error is not None:
                self._call(self.on_failure, batch, error)
            if new_drops:
                self._call(self.on_drop, new_drops)
            if idle:  # before the batch counts as done: a flush returns with the writer idle
                self._call(self.on_idle)
            with self._cond:
                self._done += len(batch)
                self._cond.notify_all()

    def _call(self, hook: Callable | None, *args) -> None:
        if hook is None:
            return
        try:
            hook(*args)
        except Exception:  # noqa: BLE001 - the hook's own failure is logged, the writer goes on
            logger.error("%s: %s failed", self.name, getattr(hook, "__name__", "a hook"), exc_info=True)


class ProcessWriter:
    """A process's one :class:`BatchWriter`, made by ``make()`` on first use (from settings read
    then); ``shutdown`` (a Celery worker process ending: its pool may leave with ``os._exit``, which
    runs no ``atexit`` handler) writes what it holds and stops it, if it was made."""

    def __init__(self, make: Callable[[], BatchWriter]):
        self._make = make
        self._writer: BatchWriter | None = None
        self._lock = threading.Lock()

    def get(self) -> BatchWriter:
        if self._writer is None:
            with self._lock:
                if self._writer is None:
                    self._writer = self._make()
        return self._writer

    def shutdown(self, **kwargs) -> None:
        if self._writer is not None:
            self._writer.shutdown()


def writers_shutdown(timeout: float = 30.0) -> None:
    """Flush and stop every writer of this process (at a clean exit)."""
    for writer in list(_writers):
        writer.shutdown(timeout)


def _writers_after_fork() -> None:
    """A forked child (a prefork worker) starts every writer with an empty queue and no thread: the
    parent writes what it queued, and the child's thread starts with its first submission."""
    for writer in list(_writers):
        writer._reset()


atexit.register(writers_shutdown)
os.register_at_fork(after_in_child=_writers_after_fork)

__all__ = ["BatchWriter", "ProcessWriter", "writers_shutdown"]
