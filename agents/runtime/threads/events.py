"""The event stream of a thread run: every chunk gets the thread's next ``seq``, reaches this
process's subscribers and other processes (pub/sub, through one outbox per process) at once, and
the event log in small batches (fenced by the lease's token).

A seq handed to a subscriber is never given to another chunk, even when the process dies before
the chunk is logged: the run hands out only seqs reserved in the lease row (``reserved_seq``, a
block of :data:`SEQ_BLOCK` taken with the lease, extended by the event writes as the run goes), and
a run that takes the thread over starts after the reservation. A chunk beyond the reservation
waits (for every subscriber) until the write that logs it and extends the reservation commits.

:class:`ActiveRun` is one run this process executes for a thread, with its lease and its batching;
:class:`EventLogWriter` writes the batches of all the process's runs together; :class:`EventPublisher`
sends numbered chunks to subscribers here and in other processes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..abort import AbortController
from .store import PubSub, ThreadStore

logger = logging.getLogger(__name__)

#: chunks after which buffered events are written at once (the rest waits for a short timer)
FLUSH_NOW = frozenset({"finish", "abort", "error", "tool-call-approval", "tripwire"})
#: a step's end (of a step after which the run goes on) is written this long after it, in a write
#: of its own: by then the next step's request is on its way and the write overlaps the model's
#: answer instead of delaying the request (measured: written at once, the time between a model's
#: answer and the next request was 3.3 to 4.3 ms for a run alone on a daphne process, 2.5 to 3.2
#: ms this way, ``bench/concurrency.py --runs 1``; with 500 runs at once no worse)
STEP_END_DELAY_S = 0.01
#: the longest a chunk of a step in progress waits for its write (subscribers have it at once; the
#: log is for late readers and other processes' gap fills). Measured: with 50 sends at once on one
#: process, a 20 ms timer fired within most one-step runs, one more transaction each
FLUSH_DELAY_S = 0.1
#: after the run's last step: the chunks not logged yet go with the run's final transaction, unless
#: the run's end takes longer than this (a busy database, an end that waits on something)
TAIL_DELAY_S = 1.0
FLUSH_MAX = 64
#: seqs a run reserves at a time (with the lease, then whenever less than half a block is left)
SEQ_BLOCK = 256


class LayerFailures:
    """The channel-layer failures a runtime sees. Pub/sub is best effort (the event log is the
    truth): a failure is never raised to the caller; the first of an outage is logged with its
    traceback, the next ones at debug level until an operation succeeds again. ``failing`` tells
    subscribers to read the event log meanwhile (:mod:`.subscriptions`)."""

    def __init__(self):
        self.failing = False

    def failed(self, what: str) -> None:
        if self.failing:
            logger.debug("channel layer still failing (%s)", what, exc_info=True)
            return
        self.failing = True
        logger.error("channel layer failed (%s); subscribers read the event log until it is back", what,
                     exc_info=True)

    def succeeded(self) -> None:
        if self.failing:
            self.failing = False
            logger.warning("channel layer works again")


class EventPublisher:
    """Numbered chunks to this process's subscribers (``local``) and to other processes (``remote``,
    ``send``).

    Other processes get a thread's chunks as they are handed out here, not after they are logged
    (the seqs are reserved: see the module docstring; a subscriber there that sees a gap waits for
    the log to fill it, :mod:`.subscriptions`). What is sent goes into one outbox per process: one
    task publishes everything it holds at once (``PubSub.publish_many`` when the pub/sub has it:
    one Redis round trip), each thread's chunks that waited together as one message, in order. A
    process that publishes hundreds of threads' chunks a second therefore makes a round trip per
    turn of its event loop, not one per chunk (channels-redis publishes one message per round trip
    on a process's connection: at a few hundred a second on a busy loop they queued for seconds)."""

    def __init__(self, local: Callable[[str, list[dict]], None], pubsub: PubSub | None, process_id: str,
                 failures: LayerFailures | None = None, spawn: Callable = asyncio.ensure_future):
        self.local = local
        self.pubsub = pubsub
        self.process_id = process_id
        self.failures = failures or LayerFailures()
        self._spawn = spawn
        self._outbox: list[tuple[str, dict]] = []
        self._open: dict[str, dict] = {}  # thread key → its chunks message still in the outbox
        self._sent: asyncio.Future | None = None  # done once the outbox as it is now has been published
        self._sending = False

    def send(self, key: str, chunks: list[dict]) -> asyncio.Future | None:
        """Queue ``chunks`` for other processes (after what was queued before for the thread);
        returns a future done once they are published (or the publish failed: never raises)."""
        if self.pubsub is None or not chunks:
            return None
        message = self._open.get(key)
        if message is None:
            message = self._open[key] = {"kind": "chunks", "origin": self.process_id, "chunks": []}
            self._outbox.append((key, message))
        message["chunks"].extend(chunks)
        if self._sent is None:
            self._sent = asyncio.get_running_loop().create_future()
        if not self._sending:
            self._sending = True
            self._spawn(self._send_outbox())
        return self._sent

    async def _send_outbox(self) -> None:
        try:
            while self._outbox:
                batch, sent = self._outbox, self._sent
                self._outbox, self._open, self._sent = [], {}, None
                try:
                    publish_many = getattr(self.pubsub, "publish_many", None)
                    if publish_many is not None:
                        await publish_many(batch)
                    else:
                        for key, message in batch:
                            await self.pubsub.publish(key, message)
                except Exception:
                    self.failures.failed("publish chunks")
                else:
                    self.failures.succeeded()
                finally:
                    if sent is not None and not sent.done():
                        sent.set_result(None)
        finally:
            self._sending = False
            if self._sent is not None and not self._sent.done():
                # cancelled with messages left (the loop ends): their waiters go on (best effort:
                # subscribers elsewhere read the event log on a gap)
                self._sent.set_result(None)

    async def remote(self, key: str, chunks: list[dict]) -> None:
        """Publish to other processes (through the outbox, after the thread's chunks queued
        before); a failure is logged (once per outage: :class:`LayerFailures`), never raised: their
        subscribers read the chunks from the event log."""
        sent = self.send(key, chunks)
        if sent is not None:
            await asyncio.shield(sent)

    async def both(self, key: str, chunks: list[dict]) -> None:
        """Chunks already in the event log (written by the store), to every subscriber."""
        self.local(key, chunks)
        await self.remote(key, chunks)

    async def inputs_waiting(self, key: str) -> None:
        """Tell the process that runs the thread's run that an input waits for its next step
        boundary (best effort: an input nobody heard of is handed to the next run when the run ends,
        ``run_finish``)."""
        await self._control(key, {"kind": "inputs"}, "publish an input")

    async def abort_request(self, key: str, run_id: str | None) -> None:
        """Ask the process that runs the thread's run to abort it (best effort: the request is in
        the lease row already, and the owner reads it when it renews its lease)."""
        await self._control(key, {"kind": "abort", "run_id": run_id}, "publish an abort request")

    async def _control(self, key: str, message: dict, what: str) -> None:
        """A message for the process that runs the thread's run; a failure is counted, not raised."""
        if self.pubsub is not None:
            try:
                await self.pubsub.publish(key, {**message, "origin": self.process_id})
            except Exception:
                self.failures.failed(what)
            else:
                self.failures.succeeded()


class EventLogWriter:
    """The event-log writes of a process's streaming runs, grouped. A run whose step is in
    progress does not set a timer of its own: it flushes on the process's tick
    (:meth:`flush_on_tick`), at most :data:`FLUSH_DELAY_S` after the first run due, and the batches
    of one tick (of one turn of the event loop, :meth:`append`) make one transaction for all their
    threads (``ThreadStore.append_events_many``), each still fenced by its own run's token. A
    run's other writes go on their own: a step's end :data:`STEP_END_DELAY_S` after it, chunks
    held beyond the reservation at once (``ActiveRun.flush``).

    A process streaming many runs at once (say 50 runs, each writing a step's chunks every
    :data:`FLUSH_DELAY_S`) thus makes ten transactions a second instead of one per run and batch
    (measured with ``bench/websocket.py --cases redis``: 100 runs streaming 20 chunks a second over
    two processes, the event log's writes were a sixth of each process's time; a process wrote
    5,800 batches in about 150 transactions). A group does not wait for the one before it: each
    takes its place in the database queue when it is made (a group that waited for the previous
    one would queue twice). A group that fails (a database error, a chunk the store refuses) is
    written again one batch at a time, so that a failure stays with the run it belongs to. A store
    without ``append_events_many`` gets one ``append_events`` per batch."""

    def __init__(self, store: ThreadStore, spawn: Callable = asyncio.ensure_future):
        self.store = store
        self._spawn = spawn
        self._queue: list[tuple[dict, asyncio.Future]] = []
        self._grouping: asyncio.AbstractEventLoop | None = None  # the loop a group is being made on
        self.groups = 0  # writes made (for tests and benchmarks)
        self._due: list["ActiveRun"] = []  # runs whose step in progress writes on the next tick
        self.tick: asyncio.TimerHandle | None = None

    def append(self, key: str, token: int, events: list[dict], reserve: int | None = None) -> asyncio.Future:
        """Queue one run's batch for this turn's group; the future is True once written, False
        when ``token`` lost the lease, or the store's error."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._queue.append(({"key": key, "token": token, "events": events, "reserve": reserve}, done))
        if self._grouping is not loop:  # none yet this turn (or one on a loop that has ended)
            self._grouping = loop
            loop.call_soon(self._make_group)
        return done

    def _make_group(self) -> None:
        self._grouping = None
        group, self._queue = [(w, d) for w, d in self._queue if not d.done()], []
        if group:
            self.groups += 1
            self._spawn(self._write_group(group))

    def flush_on_tick(self, run: "ActiveRun") -> None:
        """Flush ``run`` on the process's next tick, at most :data:`FLUSH_DELAY_S` from now: the
        runs due then flush together, and their batches make one write."""
        self._due.append(run)
        if self.tick is None:
            self.tick = asyncio.get_running_loop().call_later(FLUSH_DELAY_S, self._on_tick)

    def _on_tick(self) -> None:
        self.tick = None
        due, self._due = self._due, []
        for run in due:
            if run.flush_due:  # not flushed nor scheduled otherwise since
                self._spawn(run.flush(grouped=True))

    async def _write_group(self, group: list[tuple[dict, asyncio.Future]]) -> None:
        try:
            try:
                results = await self._write([write for write, _ in group])
            except Exception:  # one batch may be the cause: each on its own, its error its own
                for write, done in group:
                    try:
                        ok = await self._write_one(write)
                    except Exception as exc:
                        _settle(done, error=exc)
                    else:
                        _settle(done, ok)
            else:
                for (_, done), ok in zip(group, results):
                    _settle(done, error=ok) if isinstance(ok, Exception) else _settle(done, ok)
        finally:
            for _, done in group:  # cancelled before the end (the loop ends)
                if not done.done():
                    done.cancel()

    async def _write(self, writes: list[dict]) -> list[bool]:
        many = getattr(self.store, "append_events_many", None)
        if many is None:
            return [await self._write_one(write) for write in writes]
        return await many(writes=writes)

    async def _write_one(self, write: dict) -> bool:
        return await self.store.append_events(key=write["key"], token=write["token"], events=write["events"],
                                              reserve=write["reserve"])


def _settle(done: asyncio.Future, result: Any = None, *, error: BaseException | None = None) -> None:
    if done.done():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


class ActiveRun:
    """A run this process executes for a thread: its lease (``run_id``, ``token``), its ``seq``,
    its chunks and their batched, fenced writes to the event log.

    ``emit(chunk)`` numbers a chunk and publishes it here at once when its seq is reserved
    (``reserved``, see the module docstring), or else once the write that logs it commits (``held``
    until then); the run's ``finish`` (or ``abort``) is kept in ``final`` and published by the
    run's end, after the lease is settled. ``lost`` becomes True once a write or renewal finds the
    lease taken over; the run is then aborted (``controller``) and nothing more of it is written."""

    def __init__(self, *, key: str, agent: Any, run_id: str, token: int, last_seq: int, resource_id: str,
                 thread_id: str, store: ThreadStore, publisher: EventPublisher, spawn: Callable,
                 reserved_seq: int | None = None, writer: EventLogWriter | None = None):
        self.key = key
        self.agent = agent
        self.run_id = run_id
        self.token = token
        self.seq = last_seq
        #: the thread's last seq before this run: a subscriber that joins the run is owed what follows
        self.base_seq = last_seq
        #: the seqs up to here may be handed out before they are logged (None: no limit, a store
        #: that reserves nothing)
        self.reserved = reserved_seq
        self.resource_id = resource_id
        self.thread_id = thread_id
        self.store = store
        #: where its batches go: the process's (:class:`EventLogWriter`), or one of its own
        self.writer = writer if writer is not None else EventLogWriter(store, spawn)
        self.publisher = publisher
        self._local = publisher.local
        self._spawn = spawn
        self.controller = AbortController()
        self.chunks: list[dict] = []  # every chunk of the current run handed out (late subscribers replay it)
        self.pending: list[dict] = []  # not yet in the event log
        self.held: list[dict] = []  # numbered beyond the reservation: not handed out yet
        self.flush_handle: asyncio.TimerHandle | None = None
        self.flush_due = False  # waits for the writer's tick (``EventLogWriter.flush_on_tick``)
        self.flushing: asyncio.Future | None = None
        self.lost = False
        self.final: dict | None = None  # the run's finish chunk, published once the lease is settled
        self.error: dict | None = None  # the run's ``error`` chunk's error, once it sent one
        self.end_written = False  # the run's end was written through its ``write_end`` hook
        #: the run's end is being written: a renewal that finds the lease gone means nothing then
        #: (the end released or handed it on; a takeover fences the end's own write)
        self.ending = False
        #: the mark on the event loop of the run's current stretch of work, if any
        #: (``threads.runtime.LoopTurn``: the run lets its subscribers run when it lasts too long)
        self.loop_turn: Any = None
        #: the run's first model step has begun: until then, its opening chunks (``start``, the
        #: inputs it took) wait for that step's writes instead of a timer of their own (measured: with
        #: 50 sends at once, the run's own reads before its first step queued longer than the timer,
        #: and nearly every run paid one more transaction for its two opening chunks)
        self.stepping = False

    def emit(self, chunk: dict) -> None:
        self.seq += 1
        chunk = {**chunk, "seq": self.seq}
        kind = chunk["type"]
        if kind == "finish" or kind == "abort":  # the run's last chunk on the thread
            self.final = chunk
            if not self.held:
                self.chunks.append(chunk)
            return
        if kind == "error" and self.error is None:
            self.error = chunk["payload"].get("error")
        self.pending.append(chunk)
        if self.held or (self.reserved is not None and self.seq > self.reserved):
            self.held.append(chunk)  # handed out once logged (``_write``) or at the run's end
            if len(self.held) == 1 or len(self.pending) >= FLUSH_MAX:  # later ones: ``_write`` flushes again
                self.schedule_flush(0)
            return
        self._hand_out(chunk)
        if kind == "step-finish" and not chunk["payload"]["stepResult"].get("isContinued", True):
            # the run's last step: its tail goes with the run's final transaction (measured: with
            # 50 sends at once, the short timer an earlier chunk set fired while the run's end waited
            # for the database, and a quarter of the worker thread's time went to those writes)
            self.schedule_flush(TAIL_DELAY_S)
        elif kind == "step-finish" and len(self.pending) < FLUSH_MAX:
            handle = self.flush_handle  # a write due sooner stays as it is (fast steps never postpone it)
            if handle is None or handle.when() > asyncio.get_running_loop().time() + STEP_END_DELAY_S:
                self.schedule_flush(STEP_END_DELAY_S)
        elif kind in FLUSH_NOW or len(self.pending) >= FLUSH_MAX:
            self.schedule_flush(0)
        elif self.flush_handle is None and not self.flush_due and (self.stepping or kind == "step-start"):
            self.stepping = True
            self.flush_due = True
            self.writer.flush_on_tick(self)

    def _hand_out(self, chunk: dict) -> None:
        if chunk["type"] == "start" and not chunk.get("payload", {}).get("resumed"):
            self.chunks = []
        self.chunks.append(chunk)
        self._local(self.key, [chunk])
        self.publisher.send(self.key, [chunk])

    def release_held(self, upto: int | None = None) -> None:
        """Hand out the held chunks up to seq ``upto`` (all of them when None): their seqs are now
        reserved or logged."""
        while self.held and (upto is None or self.held[0]["seq"] <= upto):
            self._hand_out(self.held.pop(0))

    def wanted_reservation(self) -> int | None:
        """The reservation a write should extend to, when less than half a block is left."""
        if self.reserved is None or self.seq + SEQ_BLOCK // 2 <= self.reserved:
            return None
        return self.seq + SEQ_BLOCK

    def schedule_flush(self, delay: float) -> None:
        """Flush in ``delay`` seconds (at once when 0), instead of whatever was scheduled before."""
        self.flush_due = False
        if self.flush_handle is not None:
            self.flush_handle.cancel()
            self.flush_handle = None
        if delay <= 0:
            self._spawn(self.flush())
        else:
            self.flush_handle = asyncio.get_running_loop().call_later(delay, lambda: self._spawn(self.flush()))

    async def flush(self, *, grouped: bool = False) -> None:
        """Write buffered chunks to the event log (fenced): on the writer's tick (``grouped``) with
        the other runs' of the tick, in one transaction; otherwise (a step's end, just after it;
        chunks held beyond the reservation, the opening chunks, at once) in one of their own.
        Measured with 500 runs at once on PostgreSQL (``bench/concurrency.py``), grouping those too
        doubled the time between two model steps (p50 87-89 -> 140-237 ms): a run's write waited
        for the whole group's, on the thread's database queue."""
        self.flush_due = False
        if self.flush_handle is not None:
            self.flush_handle.cancel()
            self.flush_handle = None
        while self.flushing is not None and not self.flushing.done():
            await asyncio.shield(self.flushing)
        if not self.pending or self.lost:
            return
        batch, self.pending = self.pending, []
        self.flushing = asyncio.ensure_future(self._write(batch, grouped))
        await asyncio.shield(self.flushing)

    async def _write(self, batch: list[dict], grouped: bool = False) -> None:
        reserve = self.wanted_reservation()
        try:
            if grouped:
                ok = await self.writer.append(self.key, self.token, batch, reserve)
            else:
                ok = await self.store.append_events(key=self.key, token=self.token, events=batch, reserve=reserve)
        except Exception:
            logger.exception("could not write events of run %s", self.run_id)
            return
        if not ok:
            self.lose()
            return
        if reserve is not None:
            self.reserved = max(self.reserved, reserve)
        if self.held and not self.lost:
            self.release_held(max(self.reserved, batch[-1]["seq"]))
            if self.held:  # still beyond: the next write reserves further
                self.schedule_flush(0)

    async def take_tail(self) -> list[dict]:
        """At the run's end: wait for a write in flight, then take the chunks not logged yet (they
        go into the run's last transaction)."""
        self.flush_due = False
        if self.flush_handle is not None:
            self.flush_handle.cancel()
            self.flush_handle = None
        while self.flushing is not None and not self.flushing.done():
            await asyncio.shield(self.flushing)
        tail, self.pending = self.pending, []
        return tail

    def lose(self) -> None:
        """The lease was taken over: stop the run, write nothing more, hand out nothing more."""
        self.lost = True
        self.held = []
        self.controller.abort("lease lost")


__all__ = ["ActiveRun", "EventLogWriter", "EventPublisher", "FLUSH_DELAY_S", "FLUSH_MAX", "FLUSH_NOW", "LayerFailures", "SEQ_BLOCK",
           "STEP_END_DELAY_S", "TAIL_DELAY_S"]
