"""The ``ThreadStore`` contract, written once and run against every store (as Django's
``SessionTestsMixin``): subclass :class:`ThreadStoreContract` and give it

- ``make_store()``: a fresh, empty store;
- ``make_thread(store, resource_id, thread_id)``: the thread exists (its memory created it);
- ``expire(store, key)``: the thread's lease expires now (its owner died).

``tests/runtime/threads/test_memory_store.py`` runs it on ``InMemoryThreadStore``,
``tests/agents/test_thread_store_contract.py`` on ``DjangoThreadStore`` (the test database).
"""

from __future__ import annotations

import itertools

import pytest

from agents.runtime.errors import SignalError
from agents.runtime.signal import message_to_signal, state_to_signal
from agents.runtime.threads import (IF_ACTIVE, IF_IDLE, AbortRequest, Acceptance, Renewal, RunEnd, RunLease,
                                    parse_branch, thread_key)
from agents.runtime.threads.events import SEQ_BLOCK

R, T = "user-1", "thread-1"
KEY = thread_key(R, T)
PROCESS = "host:1:test"
TTL = 15_000


def branch(which: str, behavior: str | None = None, attributes: dict | None = None) -> dict:
    value = None if behavior is None and attributes is None else {
        **({"behavior": behavior} if behavior else {}), **({"attributes": attributes} if attributes else {})}
    return parse_branch(value, IF_ACTIVE if which == "if_active" else IF_IDLE, which)


def chunk(run_id: str, seq: int, kind: str = "text-delta") -> dict:
    return {"type": kind, "runId": run_id, "from": "AGENT", "payload": {}, "seq": seq}


class ThreadStoreContract:
    """The behaviour every ``ThreadStore`` shares (see the module docstring)."""

    def make_store(self):
        raise NotImplementedError

    async def make_thread(self, store, resource_id: str, thread_id: str) -> None:
        raise NotImplementedError

    async def expire(self, store, key: str) -> None:
        raise NotImplementedError

    @pytest.fixture
    def store(self):
        self.run_ids = (f"run-{n}" for n in itertools.count(1))
        return self.make_store()

    async def accept(self, store, text: str, *, agent: str = "bot", mode: str = "send", key: str | None = KEY,
                     if_active: dict | None = None, if_idle: dict | None = None, target_run_id: str | None = None,
                     state: dict | None = None, signal: dict | None = None) -> Acceptance:
        return await store.accept(
            key=key, agent_id=agent, resource_id=R if key else None, thread_id=T if key else None,
            signal=signal or message_to_signal(text), mode=mode, if_active=if_active or branch("if_active"),
            if_idle=if_idle or branch("if_idle"), target_run_id=target_run_id, new_run_id=next(self.run_ids),
            stream_options={}, ttl_ms=TTL, process_id=PROCESS, state=state, prepare=None)

    async def finish(self, store, lease: RunLease, *, last_seq: int = 0) -> RunEnd:
        return await store.finish(key=KEY, run_id=lease.run_id, token=lease.token, last_seq=last_seq,
                                  new_run_id=next(self.run_ids), process_id=PROCESS, ttl_ms=TTL)

    # -- acquire, deliver, drain --------------------------------------------------------------
    async def test_the_first_input_wakes_the_idle_thread_under_a_new_lease(self, store):
        assert await store.thread_state(key=KEY) is None
        woken = await self.accept(store, "a")
        assert (woken.action, woken.run_id, woken.lease.token, woken.lease.last_seq) == ("wake", "run-1", 1, 0)
        assert (woken.key, woken.lease.agent_id, woken.resource_id, woken.thread_id) == (KEY, "bot", R, T)
        assert [s["contents"] for s in woken.lease.signals] == ["a"]
        assert woken.lease.signals[0]["rendered"] == "a"  # rendered once, at acceptance
        assert await store.thread_state(key=KEY) == {"active_run_id": "run-1", "status": "running",
                                                     "agent_id": "bot", "last_seq": 0}

    async def test_an_input_to_an_active_thread_is_delivered_to_its_owner_and_drained_once(self, store):
        woken = await self.accept(store, "a")
        delivered = await self.accept(store, "b", if_active=branch("if_active", attributes={"urgent": True}))
        assert (delivered.action, delivered.run_id) == ("deliver", "run-1")
        assert delivered.signal["attributes"] == {"urgent": True}
        drained = await store.take_inputs(key=KEY, run_id="run-1", token=woken.lease.token)
        assert [(d["kind"], d["signal"]["contents"], d["signal"]["rendered"]) for d in drained] == [
            ("deliver", "b", '<user urgent="true">b</user>')]
        assert await store.take_inputs(key=KEY, run_id="run-1", token=woken.lease.token) == []

    async def test_an_input_may_target_the_active_run_by_id(self, store):
        await self.accept(store, "a")
        delivered = await self.accept(store, "b", key=None, target_run_id="run-1")
        assert (delivered.action, delivered.run_id, delivered.key) == ("deliver", "run-1", KEY)
        with pytest.raises(SignalError) as caught:
            await self.accept(store, "c", key=None, target_run_id="run-404")
        assert caught.value.code == "unknown_run"

    async def test_a_stale_token_drains_nothing(self, store):
        woken = await self.accept(store, "a")
        await self.accept(store, "b")
        assert await store.take_inputs(key=KEY, run_id="run-1", token=woken.lease.token + 1) == []
        assert await store.take_inputs(key=KEY, run_id="run-9", token=woken.lease.token) == []
        assert [q["signal"]["contents"] for q in await store.list_queued(key=KEY)] == ["b"]

    # -- fencing -------------------------------------------------------------------------------
    async def test_a_fenced_owner_writes_nothing_after_losing_the_lease(self, store):
        old = await self.accept(store, "a")
        await self.expire(store, KEY)
        new = await self.accept(store, "b")
        assert (new.action, new.run_id, new.lease.token) == ("wake", "run-2", 2)
        assert await store.append_events(key=KEY, token=old.lease.token, events=[chunk("run-1", 1)]) is False
        assert await store.renew(key=KEY, run_id="run-1", token=old.lease.token, ttl_ms=TTL) == Renewal(ok=False)
        assert await store.finish(key=KEY, run_id="run-1", token=old.lease.token, last_seq=5, new_run_id="x",
                                  process_id=PROCESS, ttl_ms=TTL) == RunEnd(fenced=True)
        assert await store.read_events(key=KEY, after_seq=0) == []
        # the new owner numbers after the seqs the dead one had reserved (it may have handed them out)
        assert await store.thread_state(key=KEY) == {"active_run_id": "run-2", "status": "running",
                                                     "agent_id": "bot", "last_seq": SEQ_BLOCK}

    async def test_the_owner_renews_its_lease(self, store):
        woken = await self.accept(store, "a")
        assert await store.renew(key=KEY, run_id="run-1", token=woken.lease.token, ttl_ms=TTL) == Renewal(ok=True)

    # -- finish and transfer -------------------------------------------------------------------
    async def test_finish_releases_the_lease_when_nothing_waits(self, store):
        woken = await self.accept(store, "a")
        assert await self.finish(store, woken.lease, last_seq=4) == RunEnd()
        assert await store.thread_state(key=KEY) == {"active_run_id": None, "status": "idle", "agent_id": "bot",
                                                     "last_seq": 4}
        assert (await self.accept(store, "b")).action == "wake"

    async def test_finish_hands_the_lease_to_the_next_run_queued_inputs_alone_in_order(self, store):
        woken = await self.accept(store, "a")
        queued = await self.accept(store, "q", mode="queue")
        assert (queued.action, queued.run_id, queued.queued) == ("deliver", "run-2", True)
        await self.accept(store, "d1")
        await self.accept(store, "d2")
        ended = await self.finish(store, woken.lease)
        nxt = ended.next
        assert (nxt.run_id, nxt.token, [s["contents"] for s in nxt.signals]) == ("run-2", 2, ["q"])
        assert await store.thread_state(key=KEY) == {"active_run_id": "run-2", "status": "running",
                                                     "agent_id": "bot", "last_seq": 0}
        last = (await self.finish(store, nxt)).next
        assert (last.token, [s["contents"] for s in last.signals]) == (3, ["d1", "d2"])
        assert (await self.finish(store, last)).next is None

    # -- suspend, resume, abort ----------------------------------------------------------------
    async def test_a_suspended_run_holds_the_thread_until_it_resumes_under_a_new_token(self, store):
        woken = await self.accept(store, "a")
        await store.suspend(key=KEY, run_id="run-1", token=woken.lease.token, last_seq=2,
                            events=[chunk("run-1", 1), chunk("run-1", 2, "finish")])
        assert await store.thread_state(key=KEY) == {"active_run_id": "run-1", "status": "suspended",
                                                     "agent_id": "bot", "last_seq": 2}
        blocked = await self.accept(store, "x", agent="other")
        assert (blocked.action, blocked.reason, blocked.run_id) == ("blocked", "thread-blocked", "run-1")
        assert (await self.accept(store, "b")).action == "deliver"
        resumed = await store.resume(run_id="run-1", process_id=PROCESS, ttl_ms=TTL)
        assert (resumed.run_id, resumed.token, resumed.last_seq, resumed.signals) == ("run-1", 2, 2, [])
        assert await store.resume(run_id="run-1", process_id=PROCESS, ttl_ms=TTL) is None
        assert [d["signal"]["contents"] for d in await store.take_inputs(key=KEY, run_id="run-1", token=2)] == ["b"]

    async def test_an_abort_request_flags_the_running_run(self, store):
        assert await store.request_abort(key=KEY) is None
        woken = await self.accept(store, "a")
        assert await store.request_abort(key=KEY) == AbortRequest("run-1")
        assert await store.renew(key=KEY, run_id="run-1", token=woken.lease.token, ttl_ms=TTL) == Renewal(ok=True, abort=True)

    async def test_aborting_a_suspended_run_ends_it_and_releases_the_thread(self, store):
        woken = await self.accept(store, "a")
        await store.suspend(key=KEY, run_id="run-1", token=woken.lease.token, last_seq=3, events=None)
        assert await store.request_abort(key=KEY) == AbortRequest("run-1", released=True, events=[
            {"type": "abort", "runId": "run-1", "from": "AGENT", "payload": {"reason": "aborted"}, "seq": 4}])
        assert await store.thread_state(key=KEY) == {"active_run_id": None, "status": "idle", "agent_id": "bot",
                                                     "last_seq": 4}

    # -- recovery ------------------------------------------------------------------------------
    async def test_recovery_takes_an_expired_lease_with_the_inputs_its_owner_never_answered(self, store):
        woken = await self.accept(store, "a")
        await self.accept(store, "b")
        assert await store.recover(process_id=PROCESS, ttl_ms=TTL, new_run_id=lambda: "run-new") == []
        await self.expire(store, KEY)
        assert await store.recover(process_id=PROCESS, ttl_ms=TTL, new_run_id=lambda: "run-new",
                                   agent_ids=["someone-else"]) == []
        [lease] = await store.recover(process_id=PROCESS, ttl_ms=TTL, new_run_id=lambda: "run-new",
                                      agent_ids=["bot"])
        assert (lease.key, lease.run_id, lease.token, lease.agent_id) == (KEY, "run-new", 2, "bot")
        assert [s["contents"] for s in lease.signals] == ["a", "b"]
        assert lease.events == []
        assert await store.take_inputs(key=KEY, run_id="run-1", token=woken.lease.token) == []
        assert await store.recover(process_id=PROCESS, ttl_ms=TTL, new_run_id=lambda: "run-x") == []

    # -- the queue -----------------------------------------------------------------------------
    async def test_waiting_inputs_are_listed_oldest_first_and_cancelled_once(self, store):
        await self.accept(store, "a")
        first = await self.accept(store, "q1", mode="queue")
        second = await self.accept(store, "q2", mode="queue")
        listed = await store.list_queued(key=KEY)
        assert [(q["id"], q["kind"], q["runId"], q["agentId"]) for q in listed] == [
            (first.signal["id"], "queue", "run-2", "bot"), (second.signal["id"], "queue", "run-3", "bot")]
        other = thread_key("someone-else", T)
        assert await store.cancel_queued(key=other, ids=[first.signal["id"]]) == 0  # another thread's id
        assert await store.cancel_queued(key=KEY, ids=[first.signal["id"], "no-such-input"]) == 1
        assert await store.cancel_queued(key=KEY, ids=[first.signal["id"]]) == 0
        assert [q["id"] for q in await store.list_queued(key=KEY)] == [second.signal["id"]]

    # -- events --------------------------------------------------------------------------------
    async def test_events_are_appended_by_the_owner_and_read_after_a_seq(self, store):
        woken = await self.accept(store, "a")
        events = [chunk("run-1", 1, "start"), chunk("run-1", 2), chunk("run-1", 3)]
        assert await store.append_events(key=KEY, token=woken.lease.token, events=events) is True
        assert await store.read_events(key=KEY, after_seq=1) == events[1:]
        assert await store.read_events(key=KEY, run_id="run-1") == events
        assert await store.read_events(key=KEY, run_id="run-2") == []
        assert (await store.thread_state(key=KEY))["last_seq"] == 3

    async def test_several_threads_events_are_appended_at_once_each_fenced_by_its_own_token(self, store):
        """``append_events_many``: one result per write, in order; a write whose token lost the
        lease writes nothing, the others are written (events and reservations)."""
        woken = await self.accept(store, "a")
        other_key = thread_key(R, "thread-2")
        other = await store.accept(
            key=other_key, agent_id="bot", resource_id=R, thread_id="thread-2", signal=message_to_signal("b"),
            mode="send", if_active=branch("if_active"), if_idle=branch("if_idle"), target_run_id=None,
            new_run_id=next(self.run_ids), stream_options={}, ttl_ms=TTL, process_id=PROCESS, state=None,
            prepare=None)
        mine = [chunk("run-1", 1, "start"), chunk("run-1", 2)]
        theirs = [chunk(other.run_id, 1, "start")]
        results = await store.append_events_many(writes=[
            {"key": other_key, "token": other.lease.token, "events": theirs, "reserve": None},
            {"key": KEY, "token": woken.lease.token + 1, "events": [chunk("run-1", 9)], "reserve": None},  # stale
            {"key": KEY, "token": woken.lease.token, "events": mine, "reserve": SEQ_BLOCK + 50},
            {"key": other_key, "token": other.lease.token, "events": [chunk(other.run_id, 2)], "reserve": None},
        ])
        assert results == [True, False, True, True]
        assert await store.read_events(key=KEY, after_seq=0) == mine
        assert await store.read_events(key=other_key, after_seq=0) == theirs + [chunk(other.run_id, 2)]
        assert (await store.thread_state(key=KEY))["last_seq"] == 2
        assert (await store.thread_state(key=other_key))["last_seq"] == 2
        # the reservation it extended holds: a takeover numbers after it
        await self.expire(store, KEY)
        taken = await self.accept(store, "c")
        assert taken.lease.last_seq == SEQ_BLOCK + 50

    async def test_seqs_a_run_reserved_are_never_numbered_again_unless_it_settles_them(self, store):
        woken = await self.accept(store, "a")
        assert (woken.lease.last_seq, woken.lease.reserved_seq) == (0, SEQ_BLOCK)
        assert await store.append_events(key=KEY, token=woken.lease.token, events=[chunk("run-1", 1)],
                                         reserve=SEQ_BLOCK + 100) is True
        # the owner ends cleanly at seq 7: what it reserved beyond is free again, no gap
        ended = await self.finish(store, woken.lease, last_seq=7)
        assert ended == RunEnd()
        second = await self.accept(store, "b")
        assert (second.lease.last_seq, second.lease.reserved_seq) == (7, 7 + SEQ_BLOCK)
        await store.append_events(key=KEY, token=second.lease.token, events=[chunk("run-2", 8)], reserve=7 + 300)
        # its process dies: whatever comes next (an idle persist, a takeover) starts after the reservation
        await self.expire(store, KEY)
        persisted = await self.accept(store, "p", if_idle=branch("if_idle", "persist"))
        assert [c["seq"] for c in persisted.events] == [7 + 300 + 1, 7 + 300 + 2, 7 + 300 + 3]
        third = await self.accept(store, "c")
        assert (third.action, third.lease.last_seq) == ("wake", 7 + 300 + 3)
        # a resume from inside the never-logged stretch gets the logged chunks after it, no snapshot
        assert [c["seq"] for c in await store.read_events(key=KEY, after_seq=100)] == [7 + 300 + n for n in (1, 2, 3)]

    async def test_an_idle_persist_writes_a_short_synthetic_run(self, store):
        persisted = await self.accept(store, "p", if_idle=branch("if_idle", "persist"))
        assert persisted.action == "persist"
        assert [(e["type"], e["seq"]) for e in persisted.events] == [
            ("start", 1), ("data-user-message", 2), ("finish", 3)]
        assert await store.read_events(key=KEY, after_seq=0) == persisted.events
        assert await store.thread_state(key=KEY) == {"active_run_id": None, "status": "idle", "agent_id": "",
                                                     "last_seq": 3}

    async def test_an_idle_persist_creates_no_thread(self, store):
        """As Mastra: the input is stored under the thread's id, the thread is not created (a state
        signal, which needs the thread, still does not find it)."""
        assert (await self.accept(store, "p", if_idle=branch("if_idle", "persist"))).action == "persist"
        signal, tracking = state_to_signal({"id": "browser", "cache_key": "k1", "mode": "snapshot", "contents": "x"})
        with pytest.raises(SignalError) as caught:
            await self.accept(store, "", signal=signal, state=tracking)
        assert (caught.value.code, caught.value.message) == ("thread_not_found",
                                                             f"sendStateSignal could not load thread {T}")

    async def test_discard_stores_nothing(self, store):
        assert (await self.accept(store, "x", if_idle=branch("if_idle", "discard"))).action == "discard"
        assert await store.list_queued(key=KEY) == []
        assert (await self.accept(store, "a")).lease.signals[0]["contents"] == "a"

    # -- thread state --------------------------------------------------------------------------
    async def test_a_state_signal_needs_the_thread_and_is_skipped_while_current(self, store):
        signal, tracking = state_to_signal({"id": "browser", "cache_key": "k1", "mode": "snapshot", "contents": "x"})
        with pytest.raises(SignalError) as caught:
            await self.accept(store, "", signal=signal, state=tracking)
        assert caught.value.code == "thread_not_found"
        assert await store.thread_state(key=KEY) is None  # nothing half-stored
        await self.make_thread(store, R, T)
        first = await self.accept(store, "", signal=signal, state=tracking)
        assert first.action == "wake"
        assert first.signal["metadata"]["state"] == {"id": "browser", "cacheKey": "k1", "mode": "snapshot",
                                                        "threadId": T, "version": 1}
        again, _ = state_to_signal({"id": "browser", "cache_key": "k1", "mode": "snapshot", "contents": "x"})
        assert (await self.accept(store, "", signal=again, state=tracking)).action == "skipped"
        changed, tracking2 = state_to_signal({"id": "browser", "cache_key": "k2", "mode": "snapshot", "contents": "y"})
        second = await self.accept(store, "", signal=changed, state=tracking2)
        assert (second.action, second.signal["metadata"]["state"]["version"]) == ("deliver", 2)

    async def test_another_resources_thread_of_the_same_id_is_another_thread(self, store):
        await self.make_thread(store, "someone-else", T)
        other = thread_key("someone-else", T)
        woke = await self.accept(store, "a")
        assert (woke.action, woke.resource_id, woke.thread_id) == ("wake", R, T)
        assert (await store.thread_state(key=KEY))["active_run_id"] == woke.run_id
        assert await store.thread_state(key=other) is None  # untouched, as any other thread
