"""The thread runtime: :class:`ThreadRuntime`, one per process, serving every agent.

It decides nothing about storage: the decision for an input (wake / deliver / queue / persist /
discard / blocked), the lease and the event log live behind a :class:`~.store.ThreadStore`, and
other processes are reached through a :class:`~.store.PubSub`. The database is the source of
truth; pub/sub only carries chunks and wake-ups between processes.

Flow of an input: ``Agent.send_message`` → :meth:`ThreadRuntime.send` (in its turn, :mod:`.admission`)
→ ``store.accept`` stores the input and decides in one transaction → for ``wake`` this process
starts the run under a fresh lease; for ``deliver`` the owning run (in whatever process) takes the
input at its next step boundary (``store.take_inputs``, read when :mod:`.boundaries` says an input
may wait) → every chunk goes through the run's event stream (:mod:`.events`) to the subscribers
(:mod:`.subscriptions`) → at the end of a run ``store.finish`` either releases the lease or
transfers it to the next run for inputs that are still waiting.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import socket
import uuid
from typing import Any, Awaitable, Callable, Iterable

from ..errors import SignalError
from ..messages import new_id, now_iso
from ..run import ThreadHooks
from ..signal import echo_chunk, render_signal
from .admission import AcceptGate
from .agents import RunnableAgents
from .background import BackgroundTasks
from .boundaries import BoundaryReads
from .events import ActiveRun, EventLogWriter, EventPublisher, LayerFailures
from .failed_runs import failed_end
from .inputs import SendResult, input_branches, storable_options
from .store import PubSub, RunEnd, RunLease, ThreadStore, thread_key
from .subscriptions import SUBSCRIBER_BUFFER_MAX, Subscriptions, ThreadSubscription
from .thread_events import ThreadEvents

logger = logging.getLogger(__name__)

#: a run's chunks reach this process's subscribers at least this often, however fast the model
#: (counted in the run's own work since the event loop last went round, not in time since the run
#: last made it go round: a run that waited for its model meanwhile has let the subscribers run)
YIELD_EVERY_S = 0.001


class _Yield:
    """Awaited, lets the event loop run once (as ``asyncio.sleep(0)``); harmless when not awaited."""

    __slots__ = ()

    def __await__(self):
        yield


_YIELD = _Yield()


class LoopTurn:
    """A mark put on the event loop (``call_soon``): ``passed`` once the loop has run what was
    ready when it was put there, so every subscriber woken before it has had its turn."""

    __slots__ = ("passed", "at")

    def __init__(self, at: float):
        self.passed = False
        self.at = at  # loop time the mark was put

    def __call__(self) -> None:
        self.passed = True


#: how the runtime starts a thread run: ``(agent, messages, options, hooks, prepared) -> output``
RunFactory = Callable[[Any, list[dict], dict, ThreadHooks, "tuple | None"], Awaitable[Any]]


async def agent_thread_run(agent: Any, messages: list[dict], options: dict, hooks: ThreadHooks,
                           prepared: tuple | None) -> Any:
    """The default :data:`RunFactory`: the agent builds the run (``Agent.start_thread_stream``)."""
    return await agent.start_thread_stream(messages, options, hooks=hooks, prepared=prepared)


def thread_emitter(active: ActiveRun, subscribers: dict, user_on_chunk: Callable | None) -> Callable[[dict], Any]:
    """A thread run's ``emit``: every chunk into the run's event stream (an aborted run's thread
    stream ends at its ``abort``, without the ``finish`` after it), then to the caller's
    ``on_chunk``, if any."""
    loop = asyncio.get_running_loop()
    key = active.key

    def emit(chunk: dict) -> Any:
        if chunk["type"] != "finish" or chunk["payload"]["stepResult"]["reason"] != "abort":
            active.emit(chunk)
        if user_on_chunk is not None:
            return user_on_chunk(chunk)
        if key in subscribers:
            # a model that streams without pausing would keep every chunk from this process's
            # subscribers until its step ends: once the run has worked YIELD_EVERY_S since the loop
            # last went round, it goes round the loop. A run that awaits its model between chunks
            # lets the loop go round anyway: going round again cost every such chunk a turn of a
            # busy loop (measured with 500 runs at once, bench/concurrency.py: the time between a
            # model's answer and the next request, p99 7 to 24 ms of it). The run's first chunk
            # still goes round once, so that its subscribers read its start before its first step
            # (measured: without it, a wake read to its finish, bench/signals.py --cases c, took
            # 2.1 to 2.5 ms instead of 1.9 to 2.1)
            turn = active.loop_turn
            if turn is None or turn.passed:
                active.loop_turn = LoopTurn(loop.time())
                loop.call_soon(active.loop_turn)
                if turn is None:
                    return _YIELD
            elif loop.time() - turn.at >= YIELD_EVERY_S:
                return _YIELD
        return None
    return emit


def memory_to_prepare(store: ThreadStore, agent: Any, stream_options: dict) -> dict | None:
    """What a wake's transaction can read for the run's memory (thread and history), when the
    agent's memory lives in the thread ``store``'s database and the wake sets no memory options."""
    memory = agent.memory
    if memory is None or "memory" in stream_options or not store.prepares_memory_of(memory.store):
        return None
    options = memory.resolve_options(None)
    return {"last_messages": options["last_messages"], "read_only": options["read_only"]}


async def lease_renewals(store: ThreadStore, active: ActiveRun, ttl_ms: int) -> None:
    """Renew a run's lease every third of a TTL, counted from when the previous renewal was sent
    (not from when it returned: a renewal that waited for the lease row's lock must not push the
    next one later); a lost lease loses the run, a requested abort aborts it."""
    interval = ttl_ms / 3000.0
    loop = asyncio.get_running_loop()
    due = loop.time() + interval
    while True:
        await asyncio.sleep(max(0.0, due - loop.time()))
        due = loop.time() + interval
        try:
            state = await store.renew(key=active.key, run_id=active.run_id, token=active.token, ttl_ms=ttl_ms)
        except Exception:
            logger.exception("lease renewal failed for %s", active.run_id)
            continue
        if not state.ok:
            if not active.ending:
                active.lose()
            return
        if state.abort:
            active.controller.abort("aborted")


class ThreadRuntime:
    """Per-process coordinator of thread runs (see the module docstring).

    ``agent_lookup`` finds an agent by id for runs started here for inputs of other processes (next
    run, recovery); ``registry_agent_ids`` lists the ids of the site's registry (recovery only takes
    threads of agents this process can run). ``subscriber_buffer_max``: unread chunks a subscriber
    may hold before it is dropped (:mod:`.subscriptions`). ``run_factory`` starts a thread run
    (:data:`RunFactory`, :func:`agent_thread_run` by default); ``accepts_at_once``: :mod:`.admission`."""

    def __init__(self, store: ThreadStore, pubsub: PubSub | None, *, lease_ttl_ms: int = 15_000,
                 subscriber_buffer_max: int = SUBSCRIBER_BUFFER_MAX,
                 agent_lookup: Callable[[str], Any] | None = None,
                 registry_agent_ids: Callable[[], Iterable[str]] | None = None,
                 run_factory: RunFactory = agent_thread_run, single_process: bool = False,
                 accepts_at_once: int = 1):
        self.store = store
        self.accept_gate = AcceptGate(accepts_at_once)
        self.run_factory = run_factory
        self.pubsub = pubsub
        #: agents this runtime can run: those it served, and the site's registry
        self.agents = RunnableAgents(agent_lookup, registry_agent_ids)
        self.lease_ttl_ms = lease_ttl_ms
        self.process_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.active: dict[str, ActiveRun] = {}
        self.background = BackgroundTasks(self.active)
        #: runs ``coro`` as a background task of this runtime (awaited by :meth:`drain_background`)
        self.spawn = self.background.spawn
        #: pub/sub is best effort: its failures are logged once per outage, never raised
        self.failures = LayerFailures()
        self.thread_events = ThreadEvents(store, pubsub, self.process_id, failures=self.failures)
        self.subscriptions = Subscriptions(store, pubsub, self.process_id, runs=self.active, spawn=self.spawn,
                                           on_abort=self._on_abort_request, abort=self.abort,
                                           buffer_max=subscriber_buffer_max, failures=self.failures,
                                           thread_events=self.thread_events, on_inputs=self._on_inputs)
        self.publisher = EventPublisher(self.subscriptions.publish, pubsub, self.process_id, failures=self.failures,
                                        spawn=self.spawn)
        #: the event-log writes of this process's runs, grouped into one transaction at a time
        self.event_writer = EventLogWriter(store, spawn=self.spawn)
        #: whether a run reads its waiting inputs at a step boundary (``single_process``: no other
        #: process sends into this one's threads)
        self.boundary_reads = BoundaryReads(single_process=single_process, runs=self.active,
                                            announce=self.publisher.inputs_waiting,
                                            degraded=self.subscriptions.degraded if pubsub is not None else None)

    # -- subscriptions ------------------------------------------------------------------------
    async def subscribe(self, agent: Any, resource_id: str, thread_id: str,
                        after_seq: int | None = None) -> ThreadSubscription:
        self.agents.served(agent)
        return await self.subscriptions.subscribe(agent, resource_id, thread_id, after_seq)

    async def subscribe_thread_events(self, resource_id: str, thread_id: str,
                                      listener: Callable[[dict], Any]) -> Callable[[], None]:
        """Call ``listener`` with the thread's events (:mod:`.thread_events`), the current queue
        count first; returns the function that unsubscribes it."""
        key = thread_key(resource_id, thread_id)
        await self.subscriptions.listen(key)
        registered = await self.thread_events.add(key, listener)

        def unsubscribe() -> None:
            self.thread_events.remove(registered)
            self.subscriptions.release(key)
        return unsubscribe

    def _on_inputs(self, key: str) -> None:
        self.boundary_reads.heard(key)

    def _on_abort_request(self, key: str, run_id: str | None) -> None:
        run = self.active.get(key)
        if run is not None and run_id in (None, run.run_id):
            run.controller.abort("aborted")

    # -- inputs -------------------------------------------------------------------------------
    async def send(self, agent: Any, *, signal: dict, mode: str, resource_id: str | None, thread_id: str | None,
                   run_id: str | None, if_active: dict | None, if_idle: dict | None,
                   state: dict | None = None) -> SendResult:
        """Accept one input (store it durably, decide) and act on the decision (see
        :func:`.inputs.input_branches` for the rules on targets and branches)."""
        self.agents.served(agent)
        if_active, if_idle, stream_options = input_branches(
            signal=signal, mode=mode, resource_id=resource_id, thread_id=thread_id, run_id=run_id,
            if_active=if_active, if_idle=if_idle)
        key = thread_key(resource_id, thread_id) if resource_id is not None else None
        async with self.accept_gate.turn():  # a few at a time: the runs going on keep their turns
            decision = await self.store.accept(
                key=key, agent_id=agent.id, resource_id=resource_id, thread_id=thread_id, signal=signal, mode=mode,
                if_active=if_active, if_idle=if_idle, target_run_id=run_id, new_run_id=new_id(),
                stream_options=storable_options(stream_options), ttl_ms=self.lease_ttl_ms, process_id=self.process_id,
                state=state, prepare=memory_to_prepare(self.store, agent, stream_options))
            action = decision.action
            if action == "skipped":
                return SendResult(action=None, skipped=True, reason="unchanged", accepted=False)
            key = decision.key
            if decision.events:
                # idle persist: a short synthetic run for subscribers, already in the event log
                await self.publisher.both(key, decision.events)
            output = None
            if decision.queued:  # waits for a run of its own: the queue grew
                await self.thread_events.changed(key)
            if decision.lease is not None:  # ``wake``
                # inputs a dead owner left behind come first (``signals`` ends with this one)
                output = await self._start_run(agent, decision.lease, stream_options, prepared=decision.prepared)
            elif (action == "deliver" and not decision.queued) or (action == "persist" and not decision.events):
                # into the active run (or its history, persisted): the owner takes it at its next step
                # boundary; tell it one waits
                await self.boundary_reads.accepted(key)
            return SendResult(action=action, signal=decision.signal, run_id=decision.run_id, output=output,
                              reason=decision.reason)

    async def list_queued(self, resource_id: str, thread_id: str) -> list[dict]:
        return await self.store.list_queued(key=thread_key(resource_id, thread_id))

    async def cancel_queued(self, resource_id: str, thread_id: str, ids: list[str]) -> int:
        if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) for i in ids):
            raise SignalError("ids must be a list of input ids", code="invalid_ids")
        key = thread_key(resource_id, thread_id)
        cancelled = await self.store.cancel_queued(key=key, ids=list(ids))
        if cancelled:
            await self.thread_events.changed(key)
        return cancelled

    # -- runs ---------------------------------------------------------------------------------
    async def _start_run(self, agent: Any, lease: RunLease, stream_options: dict, *, resume: Callable | None = None,
                         prepared: tuple | None = None):
        """Run ``agent`` under ``lease`` on its signals (rendered for the model once, here: the store
        hands them over with the content it rendered at acceptance)."""
        key, signals = lease.key, lease.signals
        started_at = now_iso()
        resource_id, thread_id = lease.resource_id, lease.thread_id
        active = ActiveRun(key=key, agent=agent, run_id=lease.run_id, token=lease.token, last_seq=lease.last_seq,
                           resource_id=resource_id, thread_id=thread_id, store=self.store,
                           publisher=self.publisher, spawn=self.spawn, reserved_seq=lease.reserved_seq,
                           writer=self.event_writer)
        self.active[key] = active
        # the lease is this run's from now on: renew it before anything here waits (a subscription,
        # the event log), or a slow start lets it expire and another process take the thread over
        renew_task = asyncio.ensure_future(lease_renewals(self.store, active, self.lease_ttl_ms))
        try:
            await self.subscriptions.listen(key)  # never raises: pub/sub is best effort
            await self.subscriptions.catch_up(key, active.seq)
        except BaseException:
            renew_task.cancel()
            raise
        messages = [render_signal(s) for s in signals]
        options = dict(stream_options or {})
        options["memory"] = {**(options.get("memory") or {}), "resource": resource_id, "thread": thread_id}
        options["run_id"] = active.run_id
        options["abort_signal"] = active.controller.signal
        emit = thread_emitter(active, self.subscriptions.by_key, options.pop("on_chunk", None))

        boundaries = [0]

        async def take_inputs() -> list[dict]:
            first = boundaries[0] == 0
            boundaries[0] += 1
            if active.lost or not self.boundary_reads.needed(key, first=first, resumed=resume is not None):
                return []
            return await self.store.take_inputs(key=key, run_id=active.run_id, token=active.token)

        async def write_end(messages: list[dict], record: dict) -> None:
            # the run's end in one write: its last events, new messages and record, and the lease
            active.end_written = True
            await self._end_run(agent, active, record["finish_reason"], renew_task, messages=messages,
                                record=record)

        async def finalize(result: Any) -> None:
            if not active.end_written:  # a suspended run (or one that ended without ``write_end``)
                await self._end_run(agent, active, result.finish_reason, renew_task)

        hooks = ThreadHooks(emit=emit, take_inputs=take_inputs, write_end=write_end, finalize=finalize,
                            echoes=[echo_chunk(s, active.run_id) for s in signals])
        if resume is not None:
            output = await resume(hooks)
        else:
            output = await self.run_factory(agent, messages, options, hooks, prepared)
        # what the run does after its end is written (``on_finish``, scorers, storing its trace) is
        # this runtime's background work too: shutdown and ``drain_background`` wait for it
        self.spawn(self._run_tail(output, agent, active, renew_task, signals, started_at))
        return output

    async def _run_tail(self, output: Any, agent: Any, active: ActiveRun, renew_task: asyncio.Task,
                        signals: list[dict], started_at: str) -> None:
        """Wait for a thread run to complete; a run that raised before its end was written is ended
        here (:mod:`.failed_runs`), so that its thread does not stay busy."""
        try:
            await output.get_full_output()
        except Exception as exc:
            if active.end_written or active.lost or active.ending:
                return
            logger.error("thread run %s raised before its end; it is ended as failed", active.run_id, exc_info=exc)
            messages, record = failed_end(active=active, agent=agent, signals=signals, started_at=started_at,
                                          exc=exc)
            active.end_written = True
            await self._end_run(agent, active, "error", renew_task, messages=messages, record=record)

    async def _end_run(self, agent: Any, active: ActiveRun, finish_reason: str, renew_task: asyncio.Task, *,
                       messages: list[dict] | None = None, record: dict | None = None) -> None:
        """After the run's last chunk: write its events (with its new messages and run record, when
        ``write_end`` brings them), then release the lease or hand it to the next run, and only then
        publish ``finish`` (so a subscriber that sees ``finish`` finds the thread idle or already
        running the next input, and its messages in the history). Never raises."""
        key = active.key
        active.ending = True
        # an input stored from here on is the end's to hand over (``run_finish``), or the next run's
        self.boundary_reads.forget(key)
        try:
            # the lease is renewed until the run's end is written: that write may wait its turn
            # longer than a TTL on a busy process
            try:
                final = active.final
                tail = await active.take_tail()  # handed out already, here and elsewhere
                if active.lost:
                    return
                events = [final] if final is not None else []
                if finish_reason == "suspended":
                    await self.store.suspend(key=key, run_id=active.run_id, token=active.token,
                                             last_seq=active.seq, events=tail + events)
                    ended = RunEnd()
                else:
                    ended = await self.store.finish(key=key, run_id=active.run_id, token=active.token,
                                                    last_seq=active.seq, new_run_id=new_id(),
                                                    process_id=self.process_id, ttl_ms=self.lease_ttl_ms,
                                                    events=tail + events, messages=messages, record=record)
            finally:
                renew_task.cancel()
            if ended.fenced:  # the lease was taken over: nothing of this run is published
                active.lost = True
                if self.active.get(key) is active:
                    self.active.pop(key, None)
                return
            nxt = ended.next
            events = events + ended.events
            active.release_held()  # the run's seqs are settled in the lease now (handed out, here and elsewhere)
            if self.active.get(key) is active:
                self.active.pop(key, None)
            if events:
                self.publisher.local(key, events)
                await self.publisher.remote(key, events)
            if nxt is not None:
                nxt = dataclasses.replace(nxt, last_seq=max(nxt.last_seq, active.seq, *(e["seq"] for e in events)))
                next_agent = agent if nxt.agent_id in (None, "", agent.id) else self.agents.get(nxt.agent_id)
                await self._start_run(next_agent, nxt, nxt.stream_options)
                await self.thread_events.changed(key)  # the next run may have taken a queued input
            else:
                self.subscriptions.release(key)
        except Exception:
            logger.exception("could not end thread run %s", active.run_id)
            if self.active.get(key) is active:
                self.active.pop(key, None)

    async def resume_suspended(self, agent: Any, *, run_id: str, resume: Callable) -> Any:
        """Continue a suspended thread run in this process (approval/decline)."""
        lease = await self.store.resume(run_id=run_id, process_id=self.process_id, ttl_ms=self.lease_ttl_ms)
        if lease is None:
            return None
        return await self._start_run(agent, lease, {}, resume=resume)

    # -- abort, recovery ----------------------------------------------------------------------
    async def abort(self, key: str) -> bool:
        """Abort the active run of a thread wherever it runs. Returns True when a run was active."""
        local = self.active.get(key)
        if local is not None:
            local.controller.abort("aborted")
            return True
        outcome = await self.store.request_abort(key=key)
        if outcome is None:
            return False
        if outcome.events:  # a suspended run was ended in the database: tell subscribers
            await self.publisher.both(key, outcome.events)
        else:
            await self.publisher.abort_request(key, outcome.run_id)
        if outcome.released:
            await self.recover()  # inputs that waited behind the suspended run go next
        return True

    async def recover(self, *, agent_lookup: Callable[[str], Any] | None = None) -> list[str]:
        """Start runs for threads whose owner died (expired lease) or that have inputs and no owner.

        Returns the run ids started here.
        """
        lookup = agent_lookup or self.agents.get

        async def start(lease: RunLease) -> str | None:
            if lease.events:
                await self.publisher.both(lease.key, lease.events)
            try:
                agent = lookup(lease.agent_id)
            except Exception:
                logger.exception("no agent %r to recover thread %s", lease.agent_id, lease.key)
                return None
            await self._start_run(agent, lease, lease.stream_options)
            await self.thread_events.changed(lease.key)
            return lease.run_id

        leases = await self.store.recover(process_id=self.process_id, ttl_ms=self.lease_ttl_ms, new_run_id=new_id,
                                          agent_ids=self.agents.ids())
        # every lease taken is held from now on: its run starts (and renews) without waiting for the
        # start of the others, which may wait for the database
        started = await asyncio.gather(*(start(lease) for lease in leases))
        return [run_id for run_id in started if run_id is not None]

    # -- background work ----------------------------------------------------------------------
    def is_idle(self) -> bool:
        """No run of this process is active and no background task is pending."""
        return self.background.is_idle()

    def busy_with(self) -> list[str]:
        """What keeps this runtime busy: its active runs and pending background tasks, by name."""
        return self.background.busy_with(lambda key: f"run {self.active[key].run_id} of {key!r}")

    async def drain_background(self, timeout: float = 5.0) -> bool:
        """Wait up to ``timeout`` seconds for this process's thread runs and flushes to finish
        (shutdown, tests). True when everything finished; False on timeout (what is still busy:
        :meth:`busy_with`). Tests use ``agents.runtime.testing.drain_thread_runtime``, which fails."""
        return await self.background.drain(timeout)

__all__ = ["LoopTurn", "RunFactory", "ThreadRuntime", "YIELD_EVERY_S", "agent_thread_run", "lease_renewals",
           "thread_emitter"]
