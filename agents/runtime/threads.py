"""The thread runtime: subscriptions, thread inputs (messages and signals), leases and delivery.

One :class:`ThreadRuntime` per process serves every agent. It decides nothing about storage: the
decision for an input (wake / deliver / queue / persist / discard / blocked), the lease and the
event log live behind a :class:`ThreadStore` (``agents.threads.store.DjangoThreadStore`` on the
database), and other processes are reached through a :class:`PubSub` (the Channels layer). The
database is the source of truth; pub/sub only carries chunks and wake-ups between processes.

Flow of an input: ``Agent.send_message`` → :meth:`ThreadRuntime.send` → ``store.accept`` stores the
input and decides in one transaction → for ``wake`` this process starts the run under a fresh lease;
for ``deliver`` the owning run (in whatever process) takes the input at its next step boundary
(``store.drain``) → every chunk gets the thread's next ``seq``, goes to local subscribers at once,
to the event log in small batches, then to other processes → at the end of a run ``store.finish``
either releases the lease or transfers it to the next run for inputs that are still waiting.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Protocol

from .abort import AbortController
from .errors import AgentConfigError, SignalError
from .messages import new_id
from .run import ThreadHooks
from .signal import check_attributes, echo_chunk, message_to_signal, render_signal

logger = logging.getLogger(__name__)

IF_ACTIVE = ("deliver", "persist", "discard")
IF_IDLE = ("wake", "persist", "discard")
#: chunks after which buffered events are written at once (the rest waits for a short timer)
FLUSH_NOW = frozenset({"step-finish", "finish", "abort", "error", "tool-call-approval", "tripwire"})
FLUSH_DELAY_S = 0.02
FLUSH_MAX = 64
#: a run's chunks reach this process's subscribers at least this often, however fast the model
YIELD_EVERY_S = 0.001


class _Yield:
    """Awaited, lets the event loop run once (as ``asyncio.sleep(0)``); harmless when not awaited."""

    __slots__ = ()

    def __await__(self):
        yield


_YIELD = _Yield()


def thread_key(resource_id: str, thread_id: str) -> str:
    return f"{resource_id}\x1f{thread_id}"


def group_name(key: str) -> str:
    """A channel-layer group name for a thread (ASCII, short, stable)."""
    return "mastra.thread." + hashlib.sha1(key.encode()).hexdigest()


class ThreadStore(Protocol):
    """What the thread runtime needs from storage (``agents.threads.store.DjangoThreadStore`` on the
    database). Every method is one transaction; ``key`` is the runtime's name of a thread
    (:func:`thread_key`). Lease changes are fenced by the owner's run id and ``token``."""

    def prepares_memory_of(self, memory_store: Any) -> bool:
        """Whether ``accept`` can prepare ``memory_store``'s thread and history for a wake."""
        ...

    async def accept(self, *, key: str | None, agent_id: str, resource_id: str | None, thread_id: str | None,
                     signal: dict, mode: str, if_active: dict, if_idle: dict, target_run_id: str | None,
                     new_run_id: str, stream_options: dict, ttl_ms: int, process_id: str, state: dict | None,
                     prepare: dict | None) -> dict:
        """Store one input and decide: ``{"action": "wake"|"deliver"|"persist"|"discard"|"blocked"|
        "skipped", "key", "signal", "run_id"?, "reason"?, "events"?, ...}`` (a wake also carries
        its lease: ``token``, ``last_seq``, ``signals``, and ``prepared`` when asked)."""
        ...

    async def drain(self, *, key: str, run_id: str, token: int) -> list[dict]:
        """Waiting inputs for the owner's next step, marked consumed: ``[{"kind", "signal"}]``."""
        ...

    async def finish(self, *, key: str, run_id: str, token: int, last_seq: int, new_run_id: str, process_id: str,
                     ttl_ms: int, events: list[dict] | None = None, messages: list[dict] | None = None,
                     record: dict | None = None) -> dict:
        """End a run: ``{"next": lease dict of the next run or None, "events", "fenced"?}``."""
        ...

    async def renew(self, *, key: str, run_id: str, token: int, ttl_ms: int) -> dict:
        """Extend the owner's lease: ``{"ok", "abort"}``."""
        ...

    async def append_events(self, *, key: str, token: int, events: list[dict]) -> bool:
        """Write numbered chunks to the event log; False when ``token`` lost the lease."""
        ...

    async def read_events(self, *, key: str, after_seq: int | None = None, run_id: str | None = None) -> list[dict]:
        """Logged chunks after ``after_seq`` (a snapshot first when pruned), or those of ``run_id``."""
        ...

    async def thread_state(self, *, key: str) -> dict | None:
        """``{"active_run_id", "status", "agent_id", "last_seq"}``, or None for an unknown thread."""
        ...

    async def request_abort(self, *, key: str) -> dict | None:
        """Abort the active run: ``{"run_id", "events", "released"}``, or None when idle."""
        ...

    async def suspend(self, *, key: str, run_id: str, token: int, last_seq: int,
                      events: list[dict] | None = None) -> None:
        """The run waits on a tool approval: the thread stays held without expiry."""
        ...

    async def resume(self, *, run_id: str, process_id: str, ttl_ms: int) -> dict | None:
        """Take the suspended run's lease again: its lease dict, or None when not suspended."""
        ...

    async def recover(self, *, process_id: str, ttl_ms: int, new_run_id: Callable[[], str],
                      agent_ids: list[str] | None = None) -> list[dict]:
        """Lease dicts of the runs started for dead owners' threads and waiting inputs."""
        ...

    async def list_queued(self, *, key: str) -> list[dict]:
        """Inputs waiting for a run, oldest first."""
        ...

    async def cancel_queued(self, *, ids: list[str]) -> int:
        """Cancel waiting inputs; how many were still waiting."""
        ...


class PubSub(Protocol):
    async def publish(self, key: str, message: dict) -> None: ...

    async def subscribe(self, key: str, callback: Callable[[dict], None]) -> Callable[[], Any]: ...


@dataclass
class SendResult:
    """What ``send_message`` / ``queue_message`` / ``send_signal`` / ``send_state_signal`` return."""

    action: str | None
    signal: dict | None = None
    run_id: str | None = None
    output: Any = None
    skipped: bool = False
    reason: str | None = None
    accepted: bool = True

    def to_dict(self) -> dict:
        data = {"accepted": self.accepted, "action": self.action, "runId": self.run_id, "signal": self.signal}
        if self.skipped:
            data.update({"skipped": True, "reason": self.reason})
        elif self.reason is not None:  # ``blocked``: ``thread-blocked``
            data["reason"] = self.reason
        return data


class ThreadSubscription:
    """``stream`` yields every chunk of the thread (each with ``seq``) until ``unsubscribe()``."""

    def __init__(self, runtime: "ThreadRuntime", agent: Any, key: str, resource_id: str, thread_id: str):
        self._runtime = runtime
        self._agent = agent
        self.key = key
        self.resource_id = resource_id
        self.thread_id = thread_id
        self._buffer: list[dict] = []
        self._waiter: asyncio.Future | None = None
        self._closed = False
        self.last_seq = 0
        self._active_run_id: str | None = None
        #: live chunks that arrive while ``subscribe`` replays the backlog wait here, so that a
        #: live chunk never overtakes (and, through the seq check, drops) older replayed ones
        self._hold: list[dict] | None = None

    def _push(self, chunk: dict) -> None:
        if self._hold is not None:
            self._hold.append(chunk)
            return
        self._accept(chunk)

    def _accept(self, chunk: dict) -> None:
        seq = chunk.get("seq", 0)
        if self._closed or seq <= self.last_seq:
            return
        self.last_seq = seq
        kind = chunk.get("type")
        if kind == "start" or kind == "finish" or kind == "abort":
            self._track(chunk)
        self._buffer.append(chunk)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _track(self, chunk: dict) -> None:
        kind = chunk.get("type")
        if kind == "start":
            self._active_run_id = chunk.get("runId")
        elif kind == "abort" or (kind == "finish" and chunk["payload"]["stepResult"]["reason"]
                                 not in ("tool-calls", "suspended")):
            if self._active_run_id == chunk.get("runId"):
                self._active_run_id = None

    @property
    def stream(self) -> AsyncIterator[dict]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict]:
        while True:
            while self._buffer:
                yield self._buffer.pop(0)
            if self._closed:
                return
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter

    def active_run_id(self) -> str | None:
        return self._active_run_id

    async def abort(self) -> bool:
        return await self._runtime.abort(self.key)

    def unsubscribe(self) -> None:
        """Stop receiving chunks; never aborts the active run."""
        if self._closed:
            return
        self._closed = True
        self._runtime._drop(self)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class _ActiveRun:
    """A run this process executes for a thread, with its lease and its event batching."""

    def __init__(self, runtime: "ThreadRuntime", key: str, agent: Any, run_id: str, token: int, last_seq: int,
                 resource_id: str, thread_id: str):
        self.runtime = runtime
        self.key = key
        self.agent = agent
        self.run_id = run_id
        self.token = token
        self.seq = last_seq
        self.resource_id = resource_id
        self.thread_id = thread_id
        self.controller = AbortController()
        self.chunks: list[dict] = []  # every chunk of the current run (late subscribers replay it)
        self.pending: list[dict] = []  # not yet in the event log
        self.flush_handle: asyncio.TimerHandle | None = None
        self.flushing: asyncio.Task | None = None
        self.lost = False
        self.final: dict | None = None  # the run's finish chunk, published once the lease is settled
        self.settled = False  # the run's end was written through ``Run.settle``
        self.yielded_at = 0.0  # loop time the run last let subscribers run (see ``emit``)


class ThreadRuntime:
    """Per-process coordinator of thread runs (see the module docstring)."""

    def __init__(self, store: Any, pubsub: Any, *, lease_ttl_ms: int = 15_000):
        self.store = store
        self.pubsub = pubsub
        self.lease_ttl_ms = lease_ttl_ms
        self.process_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.subscribers: dict[str, set[ThreadSubscription]] = {}
        self.active: dict[str, _ActiveRun] = {}
        self._pubsub_unsubs: dict[str, Callable] = {}
        self._tasks: set[asyncio.Task] = set()
        #: agents this runtime has served, by id: runs it starts for them (next run, recovery) find
        #: them even when they are not in the site's registry
        self._agents: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()

    # -- subscriptions ------------------------------------------------------------------------
    async def subscribe(self, agent: Any, resource_id: str, thread_id: str, after_seq: int | None = None) -> ThreadSubscription:
        key = thread_key(resource_id, thread_id)
        self._agents[agent.id] = agent
        sub = ThreadSubscription(self, agent, key, resource_id, thread_id)
        sub._hold = []
        self.subscribers.setdefault(key, set()).add(sub)
        first = self.active.get(key)
        early = list(first.chunks) if first is not None else []  # the local run's chunks so far
        await self._listen(key)
        if after_seq is not None:
            sub.last_seq = after_seq
            if key not in self.active:
                # a resumed subscriber knows the active run even when its start is before after_seq
                # (read before the backlog: a finish in the backlog then clears it)
                state = await self.store.thread_state(key=key)
                if state and state.get("active_run_id"):
                    sub._active_run_id = state["active_run_id"]
            backlog = await self.store.read_events(key=key, after_seq=after_seq)
            for chunk in backlog:
                sub._accept(chunk)
        if early and self.active.get(key) is not first:
            # the run ended while we read: its chunks up to our registration (later ones are held)
            for chunk in (early if after_seq is None else [c for c in early if c["seq"] > sub.last_seq]):
                sub._accept(chunk)
        local = self.active.get(key)
        if local is not None:
            if after_seq is not None and local.final is None:
                sub._active_run_id = local.run_id
            for chunk in (local.chunks if after_seq is None else [c for c in local.chunks if c["seq"] > sub.last_seq]):
                sub._accept(chunk)
        elif after_seq is None and not early:
            state = await self.store.thread_state(key=key)
            if state and state.get("active_run_id"):
                sub._active_run_id = state["active_run_id"]
                for chunk in await self.store.read_events(key=key, run_id=state["active_run_id"]):
                    sub._accept(chunk)
                if sub.last_seq == 0:
                    sub.last_seq = _base_seq(state, sub._hold)
            elif state:
                sub.last_seq = _base_seq(state, sub._hold)
        held, sub._hold = sub._hold, None
        for chunk in held:  # what arrived live meanwhile, after the replay (duplicates dropped by seq)
            sub._accept(chunk)
        return sub

    def _drop(self, sub: ThreadSubscription) -> None:
        subs = self.subscribers.get(sub.key)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                self.subscribers.pop(sub.key, None)
                if sub.key not in self.active:
                    self._unlisten(sub.key)

    async def _listen(self, key: str) -> None:
        if key in self._pubsub_unsubs or self.pubsub is None:
            return
        self._pubsub_unsubs[key] = await self.pubsub.subscribe(key, lambda message, key=key: self._on_remote(key, message))

    def _unlisten(self, key: str) -> None:
        unsub = self._pubsub_unsubs.pop(key, None)
        if unsub is not None:
            result = unsub()
            if asyncio.iscoroutine(result):
                self._spawn(result)

    def _on_remote(self, key: str, message: dict) -> None:
        if message.get("origin") == self.process_id:
            return
        kind = message.get("kind")
        if kind == "chunks":
            chunks = message["chunks"]
            for sub in list(self.subscribers.get(key, ())):
                if chunks and chunks[0]["seq"] > sub.last_seq + 1:
                    self._spawn(self._fill_gap(sub, chunks))
                else:
                    for chunk in chunks:
                        sub._push(chunk)
        elif kind == "abort":
            run = self.active.get(key)
            if run is not None and (message.get("run_id") in (None, run.run_id)):
                run.controller.abort("aborted")

    async def _fill_gap(self, sub: ThreadSubscription, chunks: list[dict]) -> None:
        for chunk in await self.store.read_events(key=sub.key, after_seq=sub.last_seq):
            sub._push(chunk)
        for chunk in chunks:
            sub._push(chunk)

    # -- inputs -------------------------------------------------------------------------------
    async def send(self, agent: Any, *, signal: dict, mode: str, resource_id: str | None, thread_id: str | None,
                   run_id: str | None, if_active: dict | None, if_idle: dict | None,
                   state: dict | None = None) -> SendResult:
        """Accept one input (store it durably, decide) and act on the decision.

        As in Mastra: ``queue`` (``queue_message``) and ``if_active`` ``persist`` need a thread
        target; ``queue`` always wakes an idle thread, whatever ``if_idle.behavior`` says; a
        ``transient`` signal is never stored in the history, so where a branch would persist it,
        it is discarded."""
        self._agents[agent.id] = agent
        if_active = parse_branch(if_active, IF_ACTIVE, "if_active")
        if_idle = parse_branch(if_idle, IF_IDLE, "if_idle")
        if run_id is not None and not isinstance(run_id, str):
            raise SignalError("run_id must be a string", code="invalid_target")
        if (resource_id is None) != (thread_id is None):
            raise SignalError("resource_id and thread_id go together", code="missing_target")
        if resource_id is None and run_id is None:
            raise SignalError("give run_id, or resource_id and thread_id", code="missing_target")
        for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
            if value is not None and (not isinstance(value, str) or not value):
                raise SignalError(f"{name} must be a non-empty string", code="missing_target")
        if mode == "queue":
            if resource_id is None or thread_id is None:
                raise SignalError("resourceId and threadId are required to queue a message", code="missing_target")
            if_idle["behavior"] = "wake"
        if resource_id is None and if_active["behavior"] == "persist":
            raise SignalError("resourceId and threadId are required to persist an active signal",
                              code="missing_target")
        if signal.get("transient"):
            for branch in (if_active, if_idle):
                if branch["behavior"] == "persist":
                    branch["behavior"] = "discard"
        stream_options = if_idle.get("stream_options") or {}
        if not isinstance(stream_options, dict):
            raise SignalError("if_idle.stream_options must be a dict of generate options", code="invalid_stream_options")
        key = thread_key(resource_id, thread_id) if resource_id is not None else None
        decision = await self.store.accept(
            key=key, agent_id=agent.id, resource_id=resource_id, thread_id=thread_id, signal=signal, mode=mode,
            if_active=if_active, if_idle=if_idle, target_run_id=run_id, new_run_id=new_id(),
            stream_options=_jsonable(stream_options), ttl_ms=self.lease_ttl_ms, process_id=self.process_id,
            state=state, prepare=self._memory_to_prepare(agent, stream_options))
        action = decision["action"]
        if action == "skipped":
            return SendResult(action=None, skipped=True, reason="unchanged", accepted=False)
        accepted = decision.get("signal") or signal
        key = decision.get("key", key)
        if decision.get("events"):
            # idle persist: a short synthetic run for subscribers, already in the event log
            self._publish_local(key, decision["events"])
            await self._publish_remote(key, decision["events"])
        output = None
        if action == "wake":
            # inputs a dead owner left behind come first (``signals`` ends with this one)
            output = await self._start_run(agent, key, decision, decision.get("signals") or [accepted],
                                           stream_options, prepared=decision.get("prepared"))
        elif action == "deliver":
            self._nudge(key)
        return SendResult(action=action, signal=accepted, run_id=decision.get("run_id"), output=output,
                          reason=decision.get("reason"))

    def _nudge(self, key: str) -> None:
        """Nothing to do: the owner drains the database at its next step boundary."""

    def _memory_to_prepare(self, agent: Any, stream_options: dict) -> dict | None:
        """What a wake's transaction can read for the run's memory (thread and history), when the
        agent's memory lives in the thread store's database and the wake sets no memory options."""
        memory = agent.memory
        prepares = getattr(self.store, "prepares_memory_of", None)
        if memory is None or "memory" in stream_options or prepares is None or not prepares(memory.store):
            return None
        options = memory.resolve_options(None)
        return {"last_messages": options["last_messages"], "read_only": options["read_only"]}

    # -- runs ---------------------------------------------------------------------------------
    async def _start_run(self, agent: Any, key: str, lease: dict, signals: list[dict], stream_options: dict,
                         *, resume: Callable | None = None, prepared: tuple | None = None):
        resource_id, thread_id = lease["resource_id"], lease["thread_id"]
        active = _ActiveRun(self, key, agent, lease["run_id"], lease["token"], lease["last_seq"], resource_id, thread_id)
        self.active[key] = active
        await self._listen(key)
        messages = [render_signal(s) for s in signals]
        options = dict(stream_options or {})
        options["memory"] = {**(options.get("memory") or {}), "resource": resource_id, "thread": thread_id}
        options["run_id"] = active.run_id
        options["abort_signal"] = active.controller.signal
        user_on_chunk = options.pop("on_chunk", None)

        def emit(chunk: dict) -> Any:
            if chunk["type"] != "finish" or chunk["payload"]["stepResult"]["reason"] != "abort":
                self._emit(active, chunk)  # the thread stream of an aborted run ends at its ``abort``
            if user_on_chunk is not None:
                return user_on_chunk(chunk)
            if key in self.subscribers:
                # a model that streams without pausing would keep every chunk from this process's
                # subscribers until its step ends: go round the event loop now and then
                now = asyncio.get_running_loop().time()
                if now - active.yielded_at >= YIELD_EVERY_S:
                    active.yielded_at = now
                    return _YIELD
            return None

        async def drain() -> list[dict]:
            if active.lost:
                return []
            return await self.store.drain(key=key, run_id=active.run_id, token=active.token)

        renew_task = asyncio.ensure_future(self._renew_loop(active))

        async def settle(messages: list[dict], record: dict) -> None:
            # the run's end in one write: its last events, new messages and record, and the lease
            active.settled = True
            await self._end_run(agent, active, record["finish_reason"], renew_task, messages=messages,
                                record=record)

        async def finalize(result: Any) -> None:
            if not active.settled:  # a suspended run (or one that ended without ``settle``)
                await self._end_run(agent, active, result.finish_reason, renew_task)

        hooks = ThreadHooks(drain=drain, settle=settle, echoes=[echo_chunk(s, active.run_id) for s in signals])
        if resume is not None:
            return await resume(emit, finalize, hooks)
        return await agent.start_thread_stream(messages, options, on_chunk=emit, finalize=finalize, hooks=hooks,
                                               prepared=prepared)

    async def _end_run(self, agent: Any, active: _ActiveRun, finish_reason: str, renew_task: asyncio.Task, *,
                       messages: list[dict] | None = None, record: dict | None = None) -> None:
        """After the run's last chunk: write its events (with its new messages and run record, when
        ``settle`` brings them), then release the lease or hand it to the next run, and only then
        publish ``finish`` (so a subscriber that sees ``finish`` finds the thread idle or already
        running the next input, and its messages in the history). Never raises."""
        try:
            renew_task.cancel()
            final = active.final
            # a write in flight ends first; chunks still buffered go into the run's last transaction
            if active.flush_handle is not None:
                active.flush_handle.cancel()
                active.flush_handle = None
            while active.flushing is not None and not active.flushing.done():
                await asyncio.shield(active.flushing)
            if active.lost:
                return
            tail, active.pending = active.pending, []  # already published here, not yet elsewhere
            events = [final] if final is not None else []
            if finish_reason == "suspended":
                await self.store.suspend(key=active.key, run_id=active.run_id, token=active.token,
                                         last_seq=active.seq, events=tail + events)
                nxt = None
            else:
                ended = await self.store.finish(key=active.key, run_id=active.run_id, token=active.token,
                                                last_seq=active.seq, new_run_id=new_id(),
                                                process_id=self.process_id, ttl_ms=self.lease_ttl_ms,
                                                events=tail + events, messages=messages, record=record)
                if ended.get("fenced"):  # the lease was taken over: nothing of this run is published
                    active.lost = True
                    if self.active.get(active.key) is active:
                        self.active.pop(active.key, None)
                    return
                nxt = ended["next"]
                events = events + ended["events"]
            if self.active.get(active.key) is active:
                self.active.pop(active.key, None)
            if events:
                self._publish_local(active.key, events)
            if tail or events:
                await self._publish_remote(active.key, tail + events)
            if nxt is not None:
                nxt.update(resource_id=active.resource_id, thread_id=active.thread_id,
                           last_seq=max(active.seq, *(e["seq"] for e in events)) if events else active.seq)
                next_agent = agent if nxt.get("agent_id") in (None, agent.id) else self._agent_for(nxt["agent_id"])
                await self._start_run(next_agent, active.key, nxt, nxt["signals"], nxt.get("stream_options") or {})
            elif active.key not in self.subscribers and active.key not in self.active:
                self._unlisten(active.key)
        except Exception:
            logger.exception("could not end thread run %s", active.run_id)
            if self.active.get(active.key) is active:
                self.active.pop(active.key, None)

    #: ids of the agents of the site's registry (set with ``agent_lookup``); recovery only takes
    #: threads of agents this process can run
    registry_agent_ids: Callable[[], Any] | None = None

    def known_agent_ids(self) -> list[str] | None:
        """Agents this process can run, or None when any agent id is accepted (no registry)."""
        if self.registry_agent_ids is None and self.agent_lookup is not None:
            return None
        ids = set(self._agents.keys())
        if self.registry_agent_ids is not None:
            ids.update(self.registry_agent_ids())
        return sorted(ids)

    def _agent_for(self, agent_id: str) -> Any:
        known = self._agents.get(agent_id)
        if known is not None:
            return known
        if self.agent_lookup is None:
            raise AgentConfigError("agents", f"no agent registry to find {agent_id!r}")
        return self.agent_lookup(agent_id)

    agent_lookup: Callable[[str], Any] | None = None

    async def _renew_loop(self, active: _ActiveRun) -> None:
        interval = self.lease_ttl_ms / 3000.0
        while True:
            await asyncio.sleep(interval)
            try:
                state = await self.store.renew(key=active.key, run_id=active.run_id, token=active.token,
                                               ttl_ms=self.lease_ttl_ms)
            except Exception:
                logger.exception("lease renewal failed for %s", active.run_id)
                continue
            if not state["ok"]:
                active.lost = True
                active.controller.abort("lease lost")
                return
            if state.get("abort"):
                active.controller.abort("aborted")

    async def resume_suspended(self, agent: Any, *, run_id: str, resume: Callable) -> Any:
        """Continue a suspended thread run in this process (approval/decline)."""
        lease = await self.store.resume(run_id=run_id, process_id=self.process_id, ttl_ms=self.lease_ttl_ms)
        if lease is None:
            return None
        return await self._start_run(agent, lease["key"], lease, [], {}, resume=resume)

    # -- chunks -------------------------------------------------------------------------------
    def _emit(self, active: _ActiveRun, chunk: dict) -> None:
        active.seq += 1
        chunk = {**chunk, "seq": active.seq}
        if chunk["type"] == "start" and not chunk.get("payload", {}).get("resumed"):
            active.chunks = []
        active.chunks.append(chunk)
        if chunk["type"] == "finish" or chunk["type"] == "abort":  # the run's last chunk on the thread
            active.final = chunk
            return
        active.pending.append(chunk)
        self._publish_local(active.key, [chunk])
        kind = chunk["type"]
        if kind == "step-finish" and not chunk["payload"]["stepResult"].get("isContinued", True):
            # the run's last step: its tail goes with the run's final transaction (``_end_run``)
            if active.flush_handle is None:
                self._schedule_flush(active, FLUSH_DELAY_S)
        elif kind in FLUSH_NOW or len(active.pending) >= FLUSH_MAX:
            self._schedule_flush(active, 0)
        elif active.flush_handle is None:
            self._schedule_flush(active, FLUSH_DELAY_S)

    def _schedule_flush(self, active: _ActiveRun, delay: float) -> None:
        if active.flush_handle is not None:
            active.flush_handle.cancel()
            active.flush_handle = None
        loop = asyncio.get_running_loop()
        if delay <= 0:
            self._spawn(self._flush(active))
        else:
            active.flush_handle = loop.call_later(delay, lambda: self._spawn(self._flush(active)))

    async def _flush(self, active: _ActiveRun) -> None:
        """Write buffered chunks to the event log (fenced), then publish them to other processes."""
        if active.flush_handle is not None:
            active.flush_handle.cancel()
            active.flush_handle = None
        while active.flushing is not None and not active.flushing.done():
            await asyncio.shield(active.flushing)
        if not active.pending or active.lost:
            return
        batch, active.pending = active.pending, []
        active.flushing = asyncio.ensure_future(self._write(active, batch))
        await asyncio.shield(active.flushing)

    async def _write(self, active: _ActiveRun, batch: list[dict]) -> None:
        try:
            ok = await self.store.append_events(key=active.key, token=active.token, events=batch)
        except Exception:
            logger.exception("could not write events of run %s", active.run_id)
            return
        if not ok:
            active.lost = True
            active.controller.abort("lease lost")
            return
        await self._publish_remote(active.key, batch)

    def _publish_local(self, key: str, chunks: list[dict]) -> None:
        for sub in list(self.subscribers.get(key, ())):
            for chunk in chunks:
                sub._push(chunk)

    async def _publish_remote(self, key: str, chunks: list[dict]) -> None:
        if self.pubsub is None:
            return
        try:
            await self.pubsub.publish(key, {"kind": "chunks", "origin": self.process_id, "chunks": chunks})
        except Exception:
            logger.exception("could not publish chunks of %s", key)

    # -- abort, queue, recovery ---------------------------------------------------------------
    async def abort(self, key: str) -> bool:
        """Abort the active run of a thread wherever it runs. Returns True when a run was active."""
        local = self.active.get(key)
        if local is not None:
            local.controller.abort("aborted")
            return True
        outcome = await self.store.request_abort(key=key)
        if outcome is None:
            return False
        if outcome["events"]:  # a suspended run was ended in the database: tell subscribers
            self._publish_local(key, outcome["events"])
            await self._publish_remote(key, outcome["events"])
        elif self.pubsub is not None:
            await self.pubsub.publish(key, {"kind": "abort", "origin": self.process_id, "run_id": outcome["run_id"]})
        if outcome.get("released"):
            await self.recover()  # inputs that waited behind the suspended run go next
        return True

    async def recover(self, *, agent_lookup: Callable[[str], Any] | None = None) -> list[str]:
        """Start runs for threads whose owner died (expired lease) or that have inputs and no owner.

        Returns the run ids started here.
        """
        lookup = agent_lookup or self._agent_for
        started = []
        for lease in await self.store.recover(process_id=self.process_id, ttl_ms=self.lease_ttl_ms,
                                              new_run_id=new_id, agent_ids=self.known_agent_ids()):
            if lease.get("events"):
                self._publish_local(lease["key"], lease["events"])
                await self._publish_remote(lease["key"], lease["events"])
            try:
                agent = lookup(lease["agent_id"])
            except Exception:
                logger.exception("no agent %r to recover thread %s", lease["agent_id"], lease["key"])
                continue
            await self._start_run(agent, lease["key"], lease, lease["signals"], lease.get("stream_options") or {})
            started.append(lease["run_id"])
        return started

    async def list_queued(self, resource_id: str, thread_id: str) -> list[dict]:
        return await self.store.list_queued(key=thread_key(resource_id, thread_id))

    async def cancel_queued(self, ids: list[str]) -> int:
        if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) for i in ids):
            raise SignalError("ids must be a list of input ids", code="invalid_ids")
        return await self.store.cancel_queued(ids=list(ids))

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain_background(self, timeout: float = 5.0) -> None:
        """Wait for this process's thread runs and flushes to finish (tests, shutdown)."""
        loop_deadline = asyncio.get_running_loop().time() + timeout
        while (self._tasks or self.active) and asyncio.get_running_loop().time() < loop_deadline:
            tasks = list(self._tasks)
            if tasks:
                await asyncio.wait(tasks, timeout=max(0.0, loop_deadline - asyncio.get_running_loop().time()))
            else:
                await asyncio.sleep(0.005)


def _base_seq(state: dict, held: list[dict] | None) -> int:
    """Where a new subscriber of a thread starts: after the thread's last seq, but never after a
    chunk that arrived live while it subscribed (that chunk is news to it)."""
    base = state.get("last_seq", 0)
    if held:
        base = min(base, held[0].get("seq", 0) - 1)
    return base


def parse_branch(value: Any, behaviors: tuple, name: str) -> dict:
    if value is None:
        return {"behavior": behaviors[0], "attributes": {}}
    if not isinstance(value, dict):
        raise SignalError(f"{name} must be a dict", code="invalid_options")
    value = {("stream_options" if k == "streamOptions" else k): v for k, v in value.items()}
    unknown = set(value) - {"behavior", "attributes", "stream_options"}
    if unknown or (name == "if_active" and "stream_options" in value):
        bad = sorted(unknown or {"stream_options"})[0]
        raise SignalError(f"{name}.{bad} is not an option", code="invalid_options")
    behavior = value.get("behavior") or behaviors[0]
    if behavior not in behaviors:
        raise SignalError(f"{name}.behavior must be one of {', '.join(behaviors)}", code="invalid_behavior")
    return {"behavior": behavior, "attributes": check_attributes(value.get("attributes"), f"{name}.attributes"),
            "stream_options": value.get("stream_options")}


def _jsonable(options: dict) -> dict:
    """Stream options stored with a queued input must be JSON; callables only apply in process."""
    import json

    out = {}
    for k, v in options.items():
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            continue
        out[k] = v
    return out


_runtimes: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ThreadRuntime]" = weakref.WeakKeyDictionary()
_factory: Callable[[], ThreadRuntime] | None = None


def set_thread_runtime_factory(factory: Callable[[], ThreadRuntime] | None) -> None:
    """Install how the process builds its ThreadRuntime (the Django app does it at start-up)."""
    global _factory
    _factory = factory
    _runtimes.clear()


def get_thread_runtime() -> ThreadRuntime:
    """This process's runtime (one per event loop: its tasks and channel reader live on that loop)."""
    loop = asyncio.get_running_loop()
    runtime = _runtimes.get(loop)
    if runtime is None:
        if _factory is None:
            raise AgentConfigError("memory", "thread features need a thread store: run inside the Django site "
                                             "(agents app installed) or call set_thread_runtime_factory()")
        runtime = _runtimes[loop] = _factory()
    return runtime


def set_thread_runtime(runtime: ThreadRuntime | None) -> None:
    """Use ``runtime`` on the running loop (tests simulate processes and restarts with it)."""
    loop = asyncio.get_running_loop()
    if runtime is None:
        _runtimes.pop(loop, None)
    else:
        _runtimes[loop] = runtime


__all__ = ["SendResult", "ThreadRuntime", "ThreadSubscription", "get_thread_runtime", "message_to_signal",
           "set_thread_runtime", "set_thread_runtime_factory", "thread_key"]
