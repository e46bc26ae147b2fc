"""Thread subscriptions: :class:`ThreadSubscription` (what a subscriber reads) and
:class:`Subscriptions` (this process's subscribers by thread, their replay on subscribe, and the
pub/sub listening that brings other processes' chunks to them).

Each subscription holds at most ``buffer_max`` unread chunks (:data:`SUBSCRIBER_BUFFER_MAX` unless
the runtime says otherwise). A subscriber that falls that far behind is dropped: after the chunks
it holds, its stream yields one ``error`` chunk with code ``subscriber_overflow`` (no ``seq``: it
is not a thread chunk) and ends. It may subscribe again with ``after_seq`` = the last ``seq`` it
read; the event log has the rest.

Chunks of runs in other processes come through pub/sub, which is best effort: while it fails (a
subscription to a thread that could not be made, a failed publish, or the pub/sub telling
``{"kind": "layer-failing"}``), this process reads the event log of the threads its subscribers
follow every :data:`LOG_POLL_S`, and once more when it works again. A failure is logged once per
outage (:class:`~.events.LayerFailures`) and never fails the caller: an accepted input is accepted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, AsyncIterator, Callable, Mapping

from ..chunks import chunk
from .events import LayerFailures
from .store import PubSub, ThreadStore, thread_key

logger = logging.getLogger(__name__)

#: unread chunks a subscriber may hold before it is dropped (per runtime: ``subscriber_buffer_max``)
SUBSCRIBER_BUFFER_MAX = 10_000
SUBSCRIBER_OVERFLOW = "subscriber_overflow"
#: how often subscribers read the event log while pub/sub fails
LOG_POLL_S = 0.5
#: a subscriber that saw a gap in another process's chunks reads the log again after this (then
#: doubling, up to a second) while the missing chunks are not logged yet, for at most GAP_WAIT_S
GAP_RETRY_S = 0.02
GAP_WAIT_S = 30.0


def overflow_chunk(key: str, limit: int) -> dict:
    """The last chunk a dropped subscriber reads."""
    return chunk("error", None, {"error": {
        "message": f"the subscriber fell {limit} chunks behind and was dropped; subscribe again with "
                   "the last seq it read", "code": SUBSCRIBER_OVERFLOW}})


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


class ThreadSubscription:
    """``stream`` yields every chunk of the thread (each with ``seq``) until ``unsubscribe()`` (or an
    overflow, see the module docstring)."""

    def __init__(self, hub: "Subscriptions", agent: Any, key: str, resource_id: str, thread_id: str, *,
                 buffer_max: int = SUBSCRIBER_BUFFER_MAX):
        self._hub = hub
        self.agent = agent
        self.key = key
        self.resource_id = resource_id
        self.thread_id = thread_id
        self.buffer_max = buffer_max
        self._buffer: deque[dict] = deque()
        self._waiter: asyncio.Future | None = None
        self._closed = False
        self.overflowed = False
        self.last_seq = 0
        self._active_run_id: str | None = None
        #: live chunks that arrive while ``subscribe`` replays the backlog wait here, so that a
        #: live chunk never overtakes (and, through the seq check, drops) older replayed ones
        self._hold: list[dict] | None = None

    def push(self, chunk: dict) -> None:
        """A live chunk of the thread (held while the subscription replays its backlog)."""
        if self._hold is not None:
            self._hold.append(chunk)
            return
        self.accept(chunk)

    def accept(self, chunk: dict) -> None:
        """Queue ``chunk`` for the reader unless it was seen already (by ``seq``)."""
        seq = chunk.get("seq", 0)
        if self._closed or seq <= self.last_seq:
            return
        if len(self._buffer) >= self.buffer_max:
            self._overflow()
            return
        self.last_seq = seq
        kind = chunk.get("type")
        if kind == "start" or kind == "finish" or kind == "abort":
            self._track(chunk)
        self._buffer.append(chunk)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _overflow(self) -> None:
        self._buffer.append(overflow_chunk(self.key, self.buffer_max))
        self.overflowed = True
        logger.warning("thread subscriber dropped after %d unread chunks (%s)", self.buffer_max, self.key)
        self.unsubscribe()

    def _track(self, chunk: dict) -> None:
        kind = chunk.get("type")
        if kind == "start":
            self._active_run_id = chunk.get("runId")
        elif kind == "abort" or (kind == "finish" and chunk["payload"]["stepResult"]["reason"]
                                 not in ("tool-calls", "suspended")):
            if self._active_run_id == chunk.get("runId"):
                self._active_run_id = None

    def set_active_run_id(self, run_id: str | None) -> None:
        self._active_run_id = run_id

    def peek_buffered(self) -> list[dict]:
        """The chunks received and not read yet (left in the subscription)."""
        return list(self._buffer)

    def take_buffered(self) -> list[dict]:
        """The chunks received and not read yet, removed from the subscription (without waiting)."""
        out = list(self._buffer)
        self._buffer.clear()
        return out

    async def read(self, timeout: float | None = None) -> list[dict] | None:
        """Every chunk received and not read yet, at once, waiting for one when there is none: ``[]``
        when ``timeout`` seconds pass without one, None once the subscription has ended and its
        chunks are read. What an SSE subscriber reads (``agents.api.threads``): a wait costs one
        future and one timer, not a task and an ``asyncio.wait`` per chunk as a timed read of
        :attr:`stream` would."""
        buffer = self._buffer
        if not buffer:
            if self._closed:
                return None
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _wake, waiter) if timeout is not None else None
            try:
                await waiter
            finally:
                if timer is not None:
                    timer.cancel()
            if not buffer:
                return None if self._closed else []
        out = list(buffer)
        buffer.clear()
        return out

    @property
    def stream(self) -> AsyncIterator[dict]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict]:
        buffer = self._buffer
        while True:
            while buffer:
                yield buffer.popleft()
            if self._closed:
                return
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter

    def active_run_id(self) -> str | None:
        return self._active_run_id

    async def abort(self) -> bool:
        return await self._hub.abort(self.key)

    def unsubscribe(self) -> None:
        """Stop receiving chunks; never aborts the active run."""
        if self._closed:
            return
        self._closed = True
        self._hub.drop(self)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class Subscriptions:
    """This process's thread subscribers and its pub/sub listening, one listener per thread.

    ``runs`` maps thread keys to the runs this process executes (their ``chunks`` so far, ``final``
    and ``run_id``: a subscriber of a local run replays them); ``on_abort(key, run_id)`` handles an
    abort request from another process; ``abort(key)`` aborts a thread's run (``sub.abort()``);
    ``on_inputs(key)`` hears that another process stored an input for the thread's run here."""

    def __init__(self, store: ThreadStore, pubsub: PubSub | None, process_id: str, *, runs: Mapping[str, Any],
                 spawn: Callable, on_abort: Callable[[str, str | None], None], abort: Callable,
                 buffer_max: int = SUBSCRIBER_BUFFER_MAX, failures: LayerFailures | None = None,
                 thread_events: Any = None, on_inputs: Callable[[str], None] | None = None):
        self.store = store
        self.on_inputs = on_inputs
        self.pubsub = pubsub
        self.process_id = process_id
        self.runs = runs
        self.spawn = spawn
        self.on_abort = on_abort
        self.abort = abort
        self.buffer_max = buffer_max
        self.by_key: dict[str, set[ThreadSubscription]] = {}
        self._unsubs: dict[str, Callable] = {}
        self.failures = failures or LayerFailures()
        self._unheard: set[str] = set()  # threads whose pub/sub subscription failed (retried by the poller)
        self._layer_failing = False  # the pub/sub said it fails (``layer-failing``)
        self._poller: asyncio.Task | None = None
        #: the thread event listeners (``thread_events.ThreadEvents``): a thread they watch is listened
        #: to, and another process's queue change reaches them
        self.thread_events = thread_events

    def __contains__(self, key: str) -> bool:
        return key in self.by_key

    async def subscribe(self, agent: Any, resource_id: str, thread_id: str,
                        after_seq: int | None = None) -> ThreadSubscription:
        """A new subscription: the current run's chunks so far (or, with ``after_seq``, every logged
        chunk after it), then the live ones, each once and in ``seq`` order."""
        key = thread_key(resource_id, thread_id)
        sub = ThreadSubscription(self, agent, key, resource_id, thread_id, buffer_max=self.buffer_max)
        sub._hold = []
        self.by_key.setdefault(key, set()).add(sub)
        first = self.runs.get(key)
        early = list(first.chunks) if first is not None else []  # the local run's chunks so far
        if first is not None and after_seq is None:
            sub.last_seq = first.base_seq  # joining that run: owed its chunks, not earlier runs'
        await self.listen(key)
        if after_seq is not None:
            sub.last_seq = after_seq
            if key not in self.runs:
                # a resumed subscriber knows the active run even when its start is before after_seq
                # (read before the backlog: a finish in the backlog then clears it)
                state = await self.store.thread_state(key=key)
                if state and state.get("active_run_id"):
                    sub.set_active_run_id(state["active_run_id"])
            for chunk in await self.store.read_events(key=key, after_seq=after_seq):
                sub.accept(chunk)
        if early and self.runs.get(key) is not first:
            # the run ended while we read: its chunks up to our registration (later ones are held)
            for chunk in (early if after_seq is None else [c for c in early if c["seq"] > sub.last_seq]):
                sub.accept(chunk)
        local = self.runs.get(key)
        if local is not None:
            if after_seq is None and first is None:
                # the run started while we registered: its chunks are what this subscriber is owed,
                # also before the first of them (its catch-up of the log must not take the
                # subscriber for one behind the thread and hand it the thread's earlier runs)
                sub.last_seq = max(sub.last_seq, local.base_seq)
            if after_seq is not None and local.final is None:
                sub.set_active_run_id(local.run_id)
            for chunk in (local.chunks if after_seq is None else [c for c in local.chunks if c["seq"] > sub.last_seq]):
                sub.accept(chunk)
        elif after_seq is None and not early:
            state = await self.store.thread_state(key=key)
            if state and state.get("active_run_id"):
                sub.set_active_run_id(state["active_run_id"])
                for chunk in await self.store.read_events(key=key, run_id=state["active_run_id"]):
                    sub.accept(chunk)
                if sub.last_seq == 0:
                    sub.last_seq = base_seq(state, sub._hold)
            elif state:
                sub.last_seq = base_seq(state, sub._hold)
        held, sub._hold = sub._hold, None
        held = [c for c in held if c.get("seq", 0) > sub.last_seq]  # duplicates of the replay
        if held and held[0].get("seq", 0) > sub.last_seq + 1 and key not in self.runs:
            # another process's chunks handed out before they were logged: the log fills the gap
            self._fill_gap(sub, held)
        else:
            for chunk in held:  # what arrived live meanwhile, after the replay
                sub.accept(chunk)
        if self.degraded():
            self._ensure_poller()
        return sub

    def drop(self, sub: ThreadSubscription) -> None:
        subs = self.by_key.get(sub.key)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                self.by_key.pop(sub.key, None)
                if sub.key not in self.runs:
                    self.unlisten(sub.key)

    def publish(self, key: str, chunks: list[dict]) -> None:
        """Give ``chunks`` to this process's subscribers of the thread."""
        subs = self.by_key.get(key)
        if not subs:
            return
        for sub in list(subs):
            for chunk in chunks:
                sub.push(chunk)

    async def catch_up(self, key: str, last_seq: int) -> None:
        """Before a run of this process numbers its chunks after ``last_seq``: subscribers that
        have not seen the thread up to it (a chunk of another process's run that pub/sub has not
        brought yet, or lost) read it from the event log first, so that no later chunk overtakes it.
        A subscriber that has seen nothing of the thread (``last_seq`` 0) is behind too."""
        behind = [s for s in self.by_key.get(key, ()) if s._hold is None and s.last_seq < last_seq]
        if behind:
            await self._read_log(key, behind)

    # -- other processes ----------------------------------------------------------------------
    async def listen(self, key: str) -> None:
        """Receive the thread's messages from other processes (once per thread). A failure is
        logged and leaves the thread to the poller (:meth:`_poll_log`), which retries."""
        if key in self._unsubs or self.pubsub is None:
            return
        try:
            self._unsubs[key] = await self.pubsub.subscribe(
                key, lambda message, key=key: self._on_remote(key, message))
        except Exception:
            self.failures.failed("subscribe to a thread")
            self._unheard.add(key)
            self._ensure_poller()
            return
        self._unheard.discard(key)

    def unlisten(self, key: str) -> None:
        self._unheard.discard(key)
        unsub = self._unsubs.pop(key, None)
        if unsub is not None:
            result = unsub()
            if asyncio.iscoroutine(result):
                self.spawn(result)

    def release(self, key: str) -> None:
        """Stop listening to a thread nobody here subscribes to or runs any more."""
        if key not in self.by_key and key not in self.runs and not (
                self.thread_events is not None and key in self.thread_events):
            self.unlisten(key)

    def _on_remote(self, key: str, message: dict) -> None:
        if message.get("origin") == self.process_id:
            return
        kind = message.get("kind")
        if kind == "layer-failing":
            self._layer_failing = True
            self._ensure_poller()
            return
        if kind == "layer-recovered":
            self._layer_failing = False
            self.failures.succeeded()
            return
        if kind == "chunks":
            chunks = message["chunks"]
            for sub in list(self.by_key.get(key, ())):
                if sub._hold is None and chunks and chunks[0]["seq"] > sub.last_seq + 1:
                    self._fill_gap(sub, chunks)
                else:
                    for chunk in chunks:
                        sub.push(chunk)
        elif kind == "abort":
            self.on_abort(key, message.get("run_id"))
        elif kind == "inputs" and self.on_inputs is not None:
            self.on_inputs(key)
        elif kind == "queue-changed" and self.thread_events is not None:
            self.spawn(self.thread_events.refresh(key))

    # -- while pub/sub fails ------------------------------------------------------------------
    def degraded(self) -> bool:
        """Whether pub/sub may be missing chunks of other processes' runs right now."""
        return self.failures.failing or self._layer_failing or bool(self._unheard)

    def _ensure_poller(self) -> None:
        if self._poller is None or self._poller.done():
            self._poller = asyncio.ensure_future(self._poll_log())

    async def _poll_log(self) -> None:
        """While pub/sub fails: retry the failed thread subscriptions and read the event log of the
        threads this process's subscribers follow (not those it runs: their chunks are here), every
        :data:`LOG_POLL_S`; once more when it works again (what was published meanwhile is lost),
        then stop. Ends when nobody here subscribes any more."""
        while True:
            await asyncio.sleep(LOG_POLL_S)
            for key in list(self._unheard):
                if key in self.by_key or key in self.runs:
                    await self.listen(key)
                else:
                    self._unheard.discard(key)
            degraded = self.degraded()
            for key in [k for k in self.by_key if k not in self.runs]:
                subs = [s for s in self.by_key.get(key, ()) if s._hold is None]
                if subs:
                    await self._read_log(key, subs)
            if not degraded or (not self.by_key and not self._unheard):
                return

    async def _read_log(self, key: str, subs: list[ThreadSubscription]) -> None:
        """Give ``subs`` the logged chunks of the thread they have not seen (in order)."""
        try:
            chunks = await self.store.read_events(key=key, after_seq=min(s.last_seq for s in subs))
        except Exception:
            logger.warning("could not read the event log of %r", key, exc_info=True)
            return
        for sub in subs:
            for chunk in chunks:
                sub.push(chunk)

    def _fill_gap(self, sub: ThreadSubscription, chunks: list[dict]) -> None:
        """``sub`` saw a gap before ``chunks`` (held meanwhile, with what comes after them): fill it
        from the event log (:meth:`_fill_from_log`), then give it the held chunks."""
        sub._hold = list(chunks)
        self.spawn(self._fill_from_log(sub))

    async def _fill_from_log(self, sub: ThreadSubscription) -> None:
        """Give ``sub`` (held: ``sub._hold``) the logged chunks between its ``last_seq`` and the
        first held one, then release what it holds. Another process hands chunks out (and
        publishes them) before it logs them: the missing ones may not be logged yet, so the log is
        read again (after :data:`GAP_RETRY_S`, doubling) until it has them, or until the thread's
        ``last_seq`` is past them (they were seqs a dead run reserved, never logged: a gap for
        good), or :data:`GAP_WAIT_S` passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GAP_WAIT_S
        delay = GAP_RETRY_S
        try:
            while not sub._closed and sub._hold:
                want = sub._hold[0].get("seq", 0) - 1
                try:
                    # the state first: when it is past the gap, the log read after it holds every
                    # chunk of the gap that will ever be logged
                    state = await self.store.thread_state(key=sub.key)
                    for chunk in await self.store.read_events(key=sub.key, after_seq=sub.last_seq):
                        if chunk.get("seq", 0) <= want:
                            sub.accept(chunk)
                    if sub.last_seq >= want or (state and state.get("last_seq", 0) >= want):
                        break
                except Exception:
                    logger.warning("could not read the event log of %r", sub.key, exc_info=True)
                if loop.time() + delay > deadline:
                    logger.warning("thread subscriber: seqs %d to %d of %r are not in the event log after %.0f s",
                                   sub.last_seq + 1, want, sub.key, GAP_WAIT_S)
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
        finally:
            held, sub._hold = sub._hold, None
            for chunk in held or ():
                sub.accept(chunk)


def base_seq(state: dict, held: list[dict] | None) -> int:
    """Where a new subscriber of a thread starts: after the thread's last seq, but never after a
    chunk that arrived live while it subscribed (that chunk is news to it)."""
    base = state.get("last_seq", 0)
    if held:
        base = min(base, held[0].get("seq", 0) - 1)
    return base


__all__ = ["SUBSCRIBER_BUFFER_MAX", "SUBSCRIBER_OVERFLOW", "Subscriptions", "ThreadSubscription", "base_seq",
           "overflow_chunk"]
