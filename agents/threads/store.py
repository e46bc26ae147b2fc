"""``DjangoThreadStore``: the runtime's ``ThreadStore`` protocol (``agents.runtime.threads``) on the ORM.

Each method runs one service of this package (one transaction) through its async twin
(``agents.connections.async_twin``), with the protocol's exact keyword parameters: a call that names
a thread on that thread's keyed database thread (``KEYED``: on PostgreSQL one of a few threads with
connections of their own, chosen by the thread, so that one thread's calls keep their order; else
Django's worker thread), the others on the worker thread; a lease renewal runs on the process's
lease thread instead (``agents.connections.async_twin`` on ``LEASE``), so that it never waits behind the worker
thread's queue.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from agents.connections import KEYED, LEASE, async_twin, keyed_queue
from agents.runtime.threads.store import AbortRequest, Acceptance, Renewal, RunEnd, RunLease

from .activity import thread_state_get
from .events import events_append, events_append_many, events_read
from .inputs import input_accept, inputs_take, queued_inputs_cancel, queued_inputs_list
from .leases import lease_renew
from .recovery import threads_recover
from .runs import run_abort_request, run_finish, run_resume, run_suspend

# the calls that name a thread run on that thread's keyed database thread (PostgreSQL), in order
ainput_accept = async_twin(input_accept, thread=KEYED)
ainputs_take = async_twin(inputs_take, thread=KEYED)
arun_finish = async_twin(run_finish, thread=KEYED)
alease_renew = async_twin(lease_renew, thread=LEASE)
aevents_append = async_twin(events_append, thread=KEYED)
aevents_append_many = async_twin(events_append_many, thread=KEYED)
aevents_read = async_twin(events_read, thread=KEYED)
athread_state_get = async_twin(thread_state_get, thread=KEYED)
arun_abort_request = async_twin(run_abort_request, thread=KEYED)
arun_suspend = async_twin(run_suspend, thread=KEYED)
arun_resume = async_twin(run_resume)
athreads_recover = async_twin(threads_recover)
aqueued_inputs_list = async_twin(queued_inputs_list, thread=KEYED)
aqueued_inputs_cancel = async_twin(queued_inputs_cancel, thread=KEYED)


class DjangoThreadStore:
    """``ThreadStore`` on the ORM (see ``agents.runtime.threads.ThreadStore`` for each method)."""

    def prepares_memory_of(self, memory_store: Any) -> bool:
        """Whether a wake can prepare ``memory_store``'s thread and history in its own transaction
        (the same database), sparing the run a separate read."""
        from agents.store import DjangoStore

        return isinstance(memory_store, DjangoStore)

    async def accept(self, *, key: str | None, agent_id: str, resource_id: str | None, thread_id: str | None,
                     signal: dict, mode: str, if_active: dict, if_idle: dict, target_run_id: str | None,
                     new_run_id: str, stream_options: dict, ttl_ms: int, process_id: str, state: dict | None,
                     prepare: dict | None) -> Acceptance:
        return await ainput_accept(
            key=key, agent_id=agent_id, resource_id=resource_id, thread_id=thread_id, signal=signal, mode=mode,
            if_active=if_active, if_idle=if_idle, target_run_id=target_run_id, new_run_id=new_run_id,
            stream_options=stream_options, ttl_ms=ttl_ms, process_id=process_id, state=state, prepare=prepare)

    async def take_inputs(self, *, key: str, run_id: str, token: int) -> list[dict]:
        return await ainputs_take(key=key, run_id=run_id, token=token)

    async def finish(self, *, key: str, run_id: str, token: int, last_seq: int, new_run_id: str, process_id: str,
                     ttl_ms: int, events: list[dict] | None = None, messages: list[dict] | None = None,
                     record: dict | None = None) -> RunEnd:
        return await arun_finish(key=key, run_id=run_id, token=token, last_seq=last_seq, new_run_id=new_run_id,
                                 process_id=process_id, ttl_ms=ttl_ms, events=events, messages=messages,
                                 record=record)

    async def renew(self, *, key: str, run_id: str, token: int, ttl_ms: int) -> Renewal:
        return await alease_renew(key=key, run_id=run_id, token=token, ttl_ms=ttl_ms)

    async def append_events(self, *, key: str, token: int, events: list[dict], reserve: int | None = None) -> bool:
        return await aevents_append(key=key, token=token, events=events, reserve=reserve)

    async def append_events_many(self, *, writes: list[dict]) -> list:
        """One transaction per database queue (``agents.connections.keyed_queue``: one on SQLite):
        each part on the queue of its threads, where their other calls run, so that it never waits
        for their lease rows' locks held by another queue's transaction (measured on PostgreSQL with
        500 runs at once: groups on the first thread's queue waited up to 1.7 s, and every call
        queued behind them). A part that fails is written again one write at a time; a write that
        fails then has its exception in its place in the results."""
        parts: dict[int, list[int]] = {}
        for index, write in enumerate(writes):
            parts.setdefault(keyed_queue(write["key"]), []).append(index)
        if len(parts) == 1:
            return await aevents_append_many(key=writes[0]["key"], writes=writes)
        results: list = [False] * len(writes)
        done = await asyncio.gather(*(aevents_append_many(key=writes[indexes[0]]["key"],
                                                          writes=[writes[i] for i in indexes])
                                      for indexes in parts.values()), return_exceptions=True)
        for indexes, outcome in zip(parts.values(), done):
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome
            if isinstance(outcome, Exception):  # that part's transaction wrote nothing
                for i in indexes:
                    write = writes[i]
                    try:
                        results[i] = await aevents_append(key=write["key"], token=write["token"],
                                                          events=write["events"], reserve=write.get("reserve"))
                    except Exception as exc:
                        results[i] = exc
                continue
            for i, ok in zip(indexes, outcome):
                results[i] = ok
        return results

    async def read_events(self, *, key: str, after_seq: int | None = None, run_id: str | None = None) -> list[dict]:
        return await aevents_read(key=key, after_seq=after_seq, run_id=run_id)

    async def thread_state(self, *, key: str) -> dict | None:
        return await athread_state_get(key=key)

    async def request_abort(self, *, key: str) -> AbortRequest | None:
        return await arun_abort_request(key=key)

    async def suspend(self, *, key: str, run_id: str, token: int, last_seq: int,
                      events: list[dict] | None = None) -> None:
        await arun_suspend(key=key, run_id=run_id, token=token, last_seq=last_seq, events=events)

    async def resume(self, *, run_id: str, process_id: str, ttl_ms: int) -> RunLease | None:
        return await arun_resume(run_id=run_id, process_id=process_id, ttl_ms=ttl_ms)

    async def recover(self, *, process_id: str, ttl_ms: int, new_run_id: Callable[[], str],
                      agent_ids: list[str] | None = None) -> list[RunLease]:
        return await athreads_recover(process_id=process_id, ttl_ms=ttl_ms, new_run_id=new_run_id,
                                      agent_ids=agent_ids)

    async def list_queued(self, *, key: str) -> list[dict]:
        return await aqueued_inputs_list(key=key)

    async def cancel_queued(self, *, key: str, ids: list[str]) -> int:
        return await aqueued_inputs_cancel(key=key, ids=ids)
