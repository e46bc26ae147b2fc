"""Thread ownership and delivery across real OS processes (DESIGN §2, invariants 1–3).

Each worker is ``thread_worker.py`` started with ``sys.executable``: its own Django, its own
database connection and its own thread runtime, built as the site builds it (channels-redis pub/sub
when ``REDIS_URL`` is given). All processes run the agents of ``thread_process_agents`` (``MASTRA``
setting), whose model logs every call to a file, so a test sees what the model was asked, in which
process, across processes. The pytest process takes part as one more process when a test needs a
subscriber (its own runtime on a channels-redis layer).

Tests that need Redis take the ``redis_url`` fixture; the race against PostgreSQL takes
``postgres_db``. The others share the test database through ``db_url_for_subprocess`` (the SQLite
test database is a file), so they run in both CI passes.

The end of the module tests the lease functions of ``agents.threads`` directly: compare-and-set
acquire, renew, release and transfer, and fencing of a stale owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from tests.agents import thread_process_agents as support
from agents.threads.events import events_append, events_read
from agents.threads.inputs import input_accept, inputs_take
from agents.threads.leases import lease_renew
from agents.threads.runs import run_abort_request, run_finish, run_resume, run_suspend
from agents.models import Message, Run, ThreadEvent, ThreadInput, ThreadLease
from agents.runtime.signal import message_to_signal
from agents.runtime.stored_messages import stored_text
from agents.runtime.testing import drain_thread_runtime
from agents.runtime.threads import Acceptance, Renewal, RunEnd, RunLease, ThreadRuntime, set_thread_runtime, thread_key

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER = HERE / "thread_worker.py"
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0
CRASH_TTL_MS = 1500


# -- harness ----------------------------------------------------------------------------------
class Worker:
    """One ``thread_worker.py`` process, driven by JSON lines (see its docstring)."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, stderr_path: Path):
        self.name = name
        self.proc = proc
        self.stderr_path = stderr_path
        self.pending: dict[int, asyncio.Future] = {}
        self.ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self.info: dict = {}
        self._ids = 0
        self._reader = asyncio.ensure_future(self._read())

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def _read(self) -> None:
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("event") == "ready":
                self.info = message
                if not self.ready.done():
                    self.ready.set_result(message)
                continue
            future = self.pending.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message)
        error = RuntimeError(f"worker {self.name} exited (rc={self.proc.returncode}); stderr:\n{self.stderr()}")
        for future in [self.ready, *self.pending.values()]:
            if not future.done():
                future.set_exception(error)

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text()[-4000:]
        except OSError:
            return ""

    async def call(self, op: str, timeout: float = CALL_TIMEOUT_S, **fields) -> dict:
        self._ids += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self._ids] = future
        self.proc.stdin.write((json.dumps({"id": self._ids, "op": op, **fields}) + "\n").encode())
        await self.proc.stdin.drain()
        try:
            answer = await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"worker {self.name}: no answer to {op} in {timeout}s; stderr:\n{self.stderr()}")
        assert answer["ok"], f"worker {self.name}: {op} failed: {answer.get('trace')}"
        return answer

    async def send(self, text: str, resource_id: str, thread_id: str, **fields) -> dict:
        return await self.call("send", text=text, resource_id=resource_id, thread_id=thread_id, **fields)

    async def kill(self) -> None:
        """SIGKILL: no cleanup runs, the lease stays as the process left it."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(self.proc.wait(), 10)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(Exception):
                self.proc.stdin.write(b'{"op": "exit"}\n')
                await self.proc.stdin.drain()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except asyncio.TimeoutError:
                await self.kill()
        self._reader.cancel()


@pytest.fixture
async def spawn(transactional_db, tmp_path):
    """``await spawn(name, db_url, redis_url=None, ttl_ms=15000, **env)`` → a ready :class:`Worker`.
    Every worker is stopped before the test database is flushed."""
    workers: list[Worker] = []

    async def start(name: str, db_url: str, *, redis_url: str | None = None, ttl_ms: int = 15_000,
                    **extra_env: str) -> Worker:
        env = {k: v for k, v in os.environ.items()
               if k not in ("DATABASE_URL", "REDIS_URL", "MASTRA", "MASTRA_THREAD_LEASE_TTL_MS")
               and not k.startswith("THREAD_TEST_")}
        env.update({
            "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DATABASE_URL": db_url, "MASTRA":
            "tests.agents.thread_process_agents:mastra", "MASTRA_THREAD_LEASE_TTL_MS": str(ttl_ms), "LOG_LEVEL": "WARNING",
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
            "THREAD_TEST_MODEL_LOG": str(tmp_path / "calls.jsonl"), "PYTHONUNBUFFERED": "1",
            # the workers are several serving processes of one site (agents.apps.site_is_one_process)
            "WEB_CONCURRENCY": "2",
        })
        if redis_url:
            env["REDIS_URL"] = redis_url
        env.update(extra_env)
        stderr_path = tmp_path / f"worker-{name}.stderr"
        with open(stderr_path, "wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(WORKER), cwd=str(ROOT), env=env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=stderr)
        worker = Worker(name, proc, stderr_path)
        workers.append(worker)
        try:
            await asyncio.wait_for(worker.ready, START_TIMEOUT_S)
        except asyncio.TimeoutError:
            raise AssertionError(f"worker {name} did not start; stderr:\n{worker.stderr()}")
        if redis_url:
            assert worker.info["pubsub"] == "ChannelLayerPubSub", worker.info
        return worker

    yield start
    await asyncio.gather(*(w.stop() for w in workers), return_exceptions=True)


@contextlib.asynccontextmanager
async def redis_runtime(redis_url: str, *, ttl_ms: int = 15_000):
    """This (pytest) process as one more site process: a thread runtime on the database and a
    channels-redis layer of its own (the site's default, the pub/sub layer), installed on the running loop."""
    from channels_redis.pubsub import RedisPubSubChannelLayer

    from agents.threads.pubsub import ChannelLayerPubSub
    from agents.threads.store import DjangoThreadStore

    # the workers' prefix (settings read MASTRA_CHANNEL_PREFIX, set per test run)
    layer = RedisPubSubChannelLayer(hosts=[redis_url], prefix=os.environ.get("MASTRA_CHANNEL_PREFIX", "mastra"))
    pubsub = ChannelLayerPubSub(layer)
    runtime = ThreadRuntime(DjangoThreadStore(), pubsub, lease_ttl_ms=ttl_ms)
    set_thread_runtime(runtime)
    try:
        yield runtime
    finally:
        await drain_thread_runtime(runtime, timeout=5)
        set_thread_runtime(None)
        await pubsub.close()
        await layer.flush()


async def wait_until(predicate, timeout: float, what: str, interval: float = 0.02):
    """Poll ``predicate`` (sync, run in a worker thread when it touches the database) until true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await sync_to_async(predicate)()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


async def read_until(sub, stop, timeout: float = 15.0, into: list | None = None) -> list[dict]:
    """Chunks from ``sub.stream`` up to and including the first one for which ``stop(chunk)``."""
    chunks = [] if into is None else into

    async def go():
        async for chunk in sub.stream:
            chunks.append(chunk)
            if stop(chunk):
                return

    try:
        await asyncio.wait_for(go(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"no matching chunk in {timeout}s; got {[(c['seq'], c['type']) for c in chunks]}")
    return chunks


def is_final(chunk: dict) -> bool:
    """The end of a run on the thread: ``abort`` (an aborted run's last chunk), or a ``finish`` that
    is not a tool-call pause."""
    return chunk["type"] == "abort" or (
        chunk["type"] == "finish" and chunk["payload"]["stepResult"]["reason"] not in ("tool-calls", "suspended"))


def user_texts(resource_id: str, thread_id: str) -> list[str]:
    """The text of a thread's stored inputs (user messages and signals, in Mastra's stored format),
    oldest first."""
    return [stored_text(m.to_dict()) for m in Message.objects.filter(
        resource_id=resource_id, thread__thread_id=thread_id, role__in=("user", "signal")).order_by("id")]


def new_thread(prefix: str) -> tuple[str, str]:
    return f"user-{prefix}", f"{prefix}-{uuid.uuid4().hex[:10]}"


# -- two processes racing to wake one idle thread ------------------------------------------------
async def race_to_wake(spawn, tmp_path, db_url: str, redis_url: str | None, rounds: int = 3) -> None:
    """Two workers send to the same idle thread at the same moment, ``rounds`` times (each time the
    thread is idle again). Each round: exactly one ``wake``, the other ``deliver`` with the winner's
    run id, one run, one model call that sees both inputs exactly once."""
    gate = tmp_path / "gate"
    gate.mkdir()
    gate_env = {"THREAD_TEST_GATE_DIR": str(gate), "THREAD_TEST_GATE_COUNT": "2"}
    a, b = await asyncio.gather(spawn("a", db_url, redis_url=redis_url, **gate_env),
                                spawn("b", db_url, redis_url=redis_url, **gate_env))
    resource_id, thread_id = new_thread("race")
    log = tmp_path / "calls.jsonl"
    seen_calls = 0
    for round_no in range(1, rounds + 1):
        texts = {"a": f"round {round_no} from a", "b": f"round {round_no} from b"}
        answers = await asyncio.gather(
            a.send(texts["a"], resource_id, thread_id, agent="racer", wait=True, marker=str(gate / "sent-a")),
            b.send(texts["b"], resource_id, thread_id, agent="racer", wait=True, marker=str(gate / "sent-b")))
        by_action = {answer["action"]: (name, answer) for name, answer in zip("ab", answers)}
        assert sorted(by_action) == ["deliver", "wake"], answers
        winner, wake = by_action["wake"]
        loser, deliver = by_action["deliver"]
        assert deliver["run_id"] == wake["run_id"]
        assert wake["finish_reason"] == "stop"

        calls = support.read_calls(log)[seen_calls:]
        seen_calls += len(calls)
        assert len(calls) == 1, calls  # the model was called once for this idle period
        assert calls[0]["pid"] == (a if winner == "a" else b).pid
        assert calls[0]["new"] == [texts[winner], texts[loser]]  # both inputs, each once, in order

        inputs = await sync_to_async(lambda: list(ThreadInput.objects.filter(
            thread__resource_id=resource_id, thread__thread_id=thread_id, signal__contents__in=list(texts.values()))))()
        assert {(i.status, i.consumed_by) for i in inputs} == {("consumed", wake["run_id"])}
        assert len(inputs) == 2
        for path in gate.iterdir():  # the next round's first step waits for the next two inputs
            path.unlink()

    runs = await sync_to_async(lambda: list(Run.objects.filter(thread__thread_id=thread_id)))()
    assert len(runs) == rounds and {(r.status, r.finish_reason) for r in runs} == {("completed", "stop")}
    stored = await sync_to_async(user_texts)(resource_id, thread_id)
    assert sorted(stored) == sorted(f"round {n} from {w}" for n in range(1, rounds + 1) for w in "ab")
    lease = await sync_to_async(ThreadLease.objects.get)(thread__thread_id=thread_id)
    assert lease.owner_run_id is None and lease.status == "idle" and lease.token == rounds


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_two_processes_racing_to_wake_an_idle_thread_on_redis_and_postgresql(
        spawn, tmp_path, postgres_db, redis_url):
    await race_to_wake(spawn, tmp_path, postgres_db, redis_url)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_two_processes_racing_to_wake_an_idle_thread_on_the_sqlite_file(spawn, tmp_path, db_url_for_subprocess):
    if connection.vendor != "sqlite":
        pytest.skip("the PostgreSQL pass runs the race against PostgreSQL and Redis")
    await race_to_wake(spawn, tmp_path, db_url_for_subprocess, None)


# -- a runner process killed mid-run ---------------------------------------------------------------
async def start_and_kill_a_runner(spawn, tmp_path, db_url: str):
    """A slow run in ``runner`` with two more inputs delivered by ``other``; then ``runner`` is killed."""
    runner = await spawn("runner", db_url, ttl_ms=CRASH_TTL_MS, THREAD_TEST_SLOW="1")
    other = await spawn("other", db_url, ttl_ms=CRASH_TTL_MS)
    resource_id, thread_id = new_thread("crash")
    log = tmp_path / "calls.jsonl"
    wake = await runner.send("slow: first", resource_id, thread_id)
    assert wake["action"] == "wake"
    await wait_until(lambda: support.read_calls(log), 15, "the runner's model call")
    delivered = [await other.send(text, resource_id, thread_id) for text in ("second", "third")]
    assert [(d["action"], d["run_id"]) for d in delivered] == [("deliver", wake["run_id"])] * 2
    await runner.kill()
    return runner, other, resource_id, thread_id, wake, [wake["signal_id"]] + [d["signal_id"] for d in delivered]


def lease_expired(key: str) -> bool:
    lease = ThreadLease.objects.get(thread__thread_id=key.split("\x1f")[1])
    return lease.expires_at is not None and lease.expires_at < timezone.now()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_killed_runners_inputs_run_in_another_process_once_its_lease_expired(
        spawn, tmp_path, db_url_for_subprocess):
    runner, other, resource_id, thread_id, wake, input_ids = await start_and_kill_a_runner(
        spawn, tmp_path, db_url_for_subprocess)
    key = thread_key(resource_id, thread_id)

    assert (await other.call("recover"))["run_ids"] == []  # the lease has not expired yet
    await wait_until(lambda: lease_expired(key), CRASH_TTL_MS / 1000 + 10, "the dead runner's lease to expire")
    recovered = (await other.call("recover"))["run_ids"]
    assert len(recovered) == 1
    assert (await other.call("idle", timeout=15))["active"] == []

    calls = support.read_calls(tmp_path / "calls.jsonl")
    assert [(c["pid"], c["new"]) for c in calls] == [
        (runner.pid, ["slow: first"]),  # the call that died with its process
        (other.pid, ["slow: first", "second", "third"]),  # every waiting input, once, in order
    ]

    def state():
        inputs = {i.input_id: (i.status, i.consumed_by) for i in ThreadInput.objects.filter(thread__thread_id=key.split("\x1f")[1])}
        runs = {r.id: r.status for r in Run.objects.filter(thread__thread_id=thread_id)}
        lease = ThreadLease.objects.get(thread__thread_id=key.split("\x1f")[1])
        stored = list(Message.objects.filter(thread__thread_id=thread_id, message_id__in=input_ids)
                      .values_list("message_id", flat=True))
        return inputs, runs, lease, stored, user_texts(resource_id, thread_id)

    inputs, runs, lease, stored, texts = await sync_to_async(state)()
    assert inputs == {i: ("consumed", recovered[0]) for i in input_ids}
    assert (runs[wake["run_id"]], runs[recovered[0]]) == ("failed", "completed")
    assert sorted(stored) == sorted(input_ids)  # each input stored once (message ids are unique)
    assert texts == ["slow: first", "second", "third"]
    assert lease.owner_run_id is None and lease.status == "idle"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_wake_after_the_runner_died_runs_the_inputs_it_left_first(spawn, tmp_path, db_url_for_subprocess):
    """No ``recover()`` in between: the next ``send_message`` finds the expired lease, wakes the
    thread and its run takes what the dead run had taken or left waiting, before the new input."""
    runner, other, resource_id, thread_id, wake, input_ids = await start_and_kill_a_runner(
        spawn, tmp_path, db_url_for_subprocess)
    key = thread_key(resource_id, thread_id)
    await wait_until(lambda: lease_expired(key), CRASH_TTL_MS / 1000 + 10, "the dead runner's lease to expire")

    fourth = await other.send("fourth", resource_id, thread_id, wait=True)
    assert fourth["action"] == "wake" and fourth["finish_reason"] == "stop"
    assert (await other.call("idle", timeout=15))["active"] == []

    calls = support.read_calls(tmp_path / "calls.jsonl")
    assert [(c["pid"], c["new"]) for c in calls] == [
        (runner.pid, ["slow: first"]),
        (other.pid, ["slow: first", "second", "third", "fourth"]),
    ]
    inputs = await sync_to_async(lambda: {i.input_id: (i.status, i.consumed_by)
                                          for i in ThreadInput.objects.filter(thread__thread_id=key.split("\x1f")[1])})()
    assert inputs == {i: ("consumed", fourth["run_id"]) for i in input_ids + [fourth["signal_id"]]}
    assert await sync_to_async(user_texts)(resource_id, thread_id) == ["slow: first", "second", "third", "fourth"]
    dead = await sync_to_async(Run.objects.get)(id=wake["run_id"])
    assert dead.status == "failed"


# -- cross-process subscription -------------------------------------------------------------------
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_subscriber_here_sees_the_chunks_of_a_run_in_another_process(spawn, db_url_for_subprocess, redis_url):
    worker = await spawn("runner", db_url_for_subprocess, redis_url=redis_url)
    resource_id, thread_id = new_thread("sub")
    key = thread_key(resource_id, thread_id)
    async with redis_runtime(redis_url):
        sub = await support.streamer.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id)
        reading = asyncio.ensure_future(read_until(sub, is_final))
        first = await worker.send("stream one", resource_id, thread_id, agent="streamer", wait=True)
        chunks = await reading
        assert first["action"] == "wake"
        seqs = [c["seq"] for c in chunks]
        assert seqs == list(range(1, len(chunks) + 1))  # strictly increasing, no gap, no duplicate
        assert chunks[0]["type"] == "start" and chunks[-1]["type"] == "finish"
        assert {c["runId"] for c in chunks} == {first["run_id"]}
        assert sum(c["type"] == "text-delta" for c in chunks) == 40
        assert sub.active_run_id() is None
        logged = await sync_to_async(events_read)(key=key, run_id=first["run_id"])
        assert json.loads(json.dumps(chunks)) == logged  # what was published is what the log holds

        # resume from the log after any seq: exactly the chunks after it
        for after in (0, 1, len(chunks) // 2, len(chunks) - 1):
            resumed = await support.streamer.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id,
                                                                 after_seq=after)
            assert await read_until(resumed, is_final, timeout=5) == chunks[after:]
            resumed.unsubscribe()

        # resume in the middle of a live run in the other process: the log, then the live tail
        live = await support.streamer.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id)
        tail: list[dict] = []
        reading = asyncio.ensure_future(read_until(live, is_final, into=tail))
        second = asyncio.ensure_future(worker.send("stream two", resource_id, thread_id, agent="streamer", wait=True))
        await wait_until(lambda: sum(c["type"] == "text-delta" for c in tail) >= 10, 15, "ten live deltas")
        cut = tail[-1]["seq"]
        resumed = await support.streamer.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id,
                                                             after_seq=cut)
        rest = await read_until(resumed, is_final)
        await reading
        assert (await second)["action"] == "wake"
        assert [c["seq"] for c in tail] == list(range(len(chunks) + 1, len(chunks) + len(tail) + 1))
        assert tail[-1]["type"] == "finish"
        assert rest == [c for c in tail if c["seq"] > cut] and rest[0]["seq"] == cut + 1
        for s in (sub, live, resumed):
            s.unsubscribe()


# -- cross-process abort --------------------------------------------------------------------------
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_abort_thread_here_stops_the_run_in_another_process_and_queued_inputs_still_run(
        spawn, tmp_path, db_url_for_subprocess, redis_url):
    runner = await spawn("runner", db_url_for_subprocess, redis_url=redis_url, THREAD_TEST_SLOW="1")
    resource_id, thread_id = new_thread("abort")
    agent = support.worker
    async with redis_runtime(redis_url):
        sub = await agent.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id)
        chunks: list[dict] = []
        first = await runner.send("slow: long", resource_id, thread_id)
        assert first["action"] == "wake"
        await read_until(sub, lambda c: c["type"] == "text-delta", into=chunks)

        queued = [await agent.queue_message(text, resource_id=resource_id, thread_id=thread_id)
                  for text in ("after one", "after two")]
        also = await agent.send_message("also", resource_id=resource_id, thread_id=thread_id)
        assert [q.action for q in queued] == ["deliver", "deliver"]
        assert len({first["run_id"], queued[0].run_id, queued[1].run_id}) == 3  # runs of their own, later
        assert (also.action, also.run_id) == ("deliver", first["run_id"])

        assert await agent.abort_thread(resource_id=resource_id, thread_id=thread_id) is True
        await read_until(sub, is_final, timeout=10, into=chunks)
        assert [(c["type"], c["runId"]) for c in chunks[-2:]] == [("text-delta", first["run_id"]), ("abort", first["run_id"])]

        # the inputs behind the aborted run: each queued one starts its own run, in order
        for _ in queued:
            await read_until(sub, is_final, timeout=15, into=chunks)
        starts = [c["runId"] for c in chunks if c["type"] == "start"]
        assert starts == [first["run_id"], queued[0].run_id, queued[1].run_id]
        assert [c["type"] if c["type"] == "abort" else c["payload"]["stepResult"]["reason"]
                for c in chunks if is_final(c)] == ["abort", "stop", "stop"]
        assert [c["runId"] for c in chunks if c["type"] == "abort"] == [first["run_id"]]
        assert [c["seq"] for c in chunks] == list(range(1, len(chunks) + 1))
        sub.unsubscribe()
    assert (await runner.call("idle", timeout=15))["active"] == []

    calls = support.read_calls(tmp_path / "calls.jsonl")
    assert calls[0]["new"] == ["slow: long"] and calls[0]["slow"]
    # after the abort every waiting input is seen once, in order ("also" joins the first run after it;
    # the aborted run left its input unanswered, so the next call sees it again as history)
    assert calls[1]["new"][0] == "slow: long"
    assert [text for c in calls[1:] for text in c["new"] if text != "slow: long"] == ["after one", "also", "after two"]
    runs = await sync_to_async(lambda: {r.id: r.status for r in Run.objects.filter(thread__thread_id=thread_id)})()
    assert runs[first["run_id"]] == "aborted"
    texts = await sync_to_async(user_texts)(resource_id, thread_id)
    assert sorted(texts) == sorted(["slow: long", "after one", "also", "after two"])


# -- thread events across processes ---------------------------------------------------------------
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_listener_here_sees_the_queue_count_another_process_changes(spawn, db_url_for_subprocess, redis_url):
    runner = await spawn("runner", db_url_for_subprocess, redis_url=redis_url, THREAD_TEST_SLOW="1")
    resource_id, thread_id = new_thread("events")
    agent = support.worker
    async with redis_runtime(redis_url):
        events: list[dict] = []
        unsubscribe = await agent.subscribe_thread_events(resource_id=resource_id, thread_id=thread_id,
                                                          listener=events.append)
        assert events == [{"type": "queue-count-changed", "count": 0}]
        first = await runner.send("slow: long", resource_id, thread_id)
        assert first["action"] == "wake"
        queued = []
        for n, text in enumerate(("later 1", "later 2"), start=1):
            queued.append(await runner.send(text, resource_id, thread_id, mode="queue"))
            # accepted in the other process: the count reaches this one through pub/sub (Redis)
            await wait_until(lambda n=n: events[-1]["count"] == n, 10, f"count {n}")
        assert [q["action"] for q in queued] == ["deliver", "deliver"]
        assert await agent.cancel_queued_inputs([queued[1]["signal_id"]], resource_id=resource_id,
                                                thread_id=thread_id) == 1
        assert [e["count"] for e in events] == [0, 1, 2, 1]
        assert await agent.abort_thread(resource_id=resource_id, thread_id=thread_id) is True
        # the runner starts the queued message's own run: the queue is empty
        await wait_until(lambda: events[-1]["count"] == 0, 15, "the queued run's start")
        assert events == [{"type": "queue-count-changed", "count": n} for n in (0, 1, 2, 1, 0)]
        unsubscribe()
    assert (await runner.call("idle", timeout=15))["active"] == []


# -- seqs across a crash (invariant 3) -------------------------------------------------------------
def jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def logged_events(thread_id: str) -> dict[int, dict]:
    return {e.seq: e.chunk for e in ThreadEvent.objects.filter(thread__thread_id=thread_id).order_by("seq")}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_after_a_kill_no_seq_a_subscriber_received_goes_to_another_chunk_and_resuming_misses_nothing(
        spawn, tmp_path, postgres_db, redis_url):
    """The runner hands chunks to its subscriber that never reach the log (its log writes stall),
    then dies (SIGKILL). The run that takes the thread over in the other process numbers its chunks
    after every seq the dead run may have handed out: no subscriber (here or there) holds a seq the
    log gives to another chunk, and a resume from the last seq each one saw returns exactly the
    logged chunks after it."""
    runner = await spawn("runner", postgres_db, redis_url=redis_url, ttl_ms=CRASH_TTL_MS, THREAD_TEST_SLOW="1",
                         THREAD_TEST_STALL_EVENTS_AFTER="2")
    other = await spawn("other", postgres_db, redis_url=redis_url, ttl_ms=CRASH_TTL_MS)
    resource_id, thread_id = new_thread("seqs")
    key = thread_key(resource_id, thread_id)
    paths = {"runner": tmp_path / "runner.jsonl", "other": tmp_path / "other.jsonl"}
    for worker, name in ((runner, "runner"), (other, "other")):
        await worker.call("subscribe", resource_id=resource_id, thread_id=thread_id, path=str(paths[name]))
    wake = await runner.send("slow: first", resource_id, thread_id)
    assert wake["action"] == "wake"

    def runner_ahead_of_the_log() -> bool:
        return len(jsonl(paths["runner"])) >= len(logged_events(thread_id)) + 10

    await wait_until(runner_ahead_of_the_log, 20, "the runner to hand out chunks it never logs")
    await runner.kill()
    await wait_until(lambda: lease_expired(key), CRASH_TTL_MS / 1000 + 10, "the dead runner's lease to expire")
    recovered = (await other.call("recover"))["run_ids"]
    assert len(recovered) == 1
    assert (await other.call("idle", timeout=20))["active"] == []
    await wait_until(lambda: any(is_final(c) and c["runId"] == recovered[0] for c in jsonl(paths["other"])), 10,
                     "the other process's subscriber to see the recovery run end")

    logged = await sync_to_async(logged_events)(thread_id)
    received = {name: jsonl(path) for name, path in paths.items()}
    # the case under test happened: the dead run handed out seqs that never reached the log
    dead_logged = {seq for seq, c in logged.items() if c["runId"] == wake["run_id"]}
    assert any(c["seq"] not in dead_logged for c in received["runner"])
    assert {c["runId"] for c in logged.values()} == {wake["run_id"], recovered[0]}
    async with redis_runtime(redis_url, ttl_ms=CRASH_TTL_MS):
        for name, chunks in received.items():
            seqs = [c["seq"] for c in chunks]
            assert seqs == sorted(set(seqs)), name  # strictly increasing
            last = seqs[-1]
            sub = await support.worker.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id,
                                                           after_seq=last)
            resumed = sub.take_buffered()
            sub.unsubscribe()
            assert resumed == [logged[seq] for seq in sorted(logged) if seq > last], name
            view = {c["seq"]: c for c in chunks + resumed}
            assert len(view) == len(chunks) + len(resumed), name  # no seq received twice
            for seq, chunk in logged.items():
                # every logged chunk reached the subscriber, live or on resume, under its own seq
                assert view.get(seq) == chunk, (name, seq, view.get(seq), chunk)


# -- the lease functions, directly (both databases) ------------------------------------------------
TTL_MS = 15_000


#: the branches ``ThreadRuntime.send`` passes when a caller gives none
DEFAULT_IF_ACTIVE = {"behavior": "deliver", "attributes": {}, "stream_options": None}
DEFAULT_IF_IDLE = {"behavior": "wake", "attributes": {}, "stream_options": None}


def accept(resource_id: str, thread_id: str, text: str, *, run_id: str | None = None, mode: str = "send",
           process: str = "p1", ttl_ms: int = TTL_MS) -> Acceptance:
    return input_accept(
        key=thread_key(resource_id, thread_id), agent_id="worker", resource_id=resource_id, thread_id=thread_id,
        signal=message_to_signal(text), mode=mode, if_active=DEFAULT_IF_ACTIVE,
        if_idle=DEFAULT_IF_IDLE, target_run_id=None, new_run_id=run_id or uuid.uuid4().hex,
        stream_options={}, ttl_ms=ttl_ms, process_id=process, state=None)


def lease_of(resource_id: str, thread_id: str) -> ThreadLease:
    return ThreadLease.objects.get(thread__thread_id=thread_id)


def expire(resource_id: str, thread_id: str) -> None:
    ThreadLease.objects.filter(thread__thread_id=thread_id).update(
        expires_at=timezone.now() - timedelta(seconds=1))


def finish(resource_id: str, thread_id: str, run_id: str, token: int, *, next_run: str = "next") -> RunLease | None:
    """The next run's lease, or None when the thread was released (or the caller was fenced out)."""
    return run_finish(key=thread_key(resource_id, thread_id), run_id=run_id, token=token, last_seq=0,
                      new_run_id=next_run, process_id="p1", ttl_ms=TTL_MS).next


def chunk(seq: int, run_id: str) -> dict:
    return {"type": "text-delta", "runId": run_id, "from": "AGENT", "payload": {"id": "t", "text": "x"}, "seq": seq}


RID = "user-lease"


@pytest.mark.django_db(transaction=True)
def test_acquire_takes_an_idle_thread_with_a_new_token():
    before = timezone.now()
    woke = accept(RID, "t-acquire", "hi", run_id="r1")
    lease = lease_of(RID, "t-acquire")
    assert (woke.action, woke.run_id, woke.lease.token) == ("wake", "r1", 1)
    assert (lease.owner_run_id, lease.token, lease.status, lease.owner_process) == ("r1", 1, "running", "p1")
    assert before + timedelta(milliseconds=TTL_MS) <= lease.expires_at <= timezone.now() + timedelta(milliseconds=TTL_MS)
    assert Run.objects.get(id="r1").status == "running"


@pytest.mark.django_db(transaction=True)
def test_acquire_of_a_held_thread_delivers_to_the_owner_and_changes_no_lease_field():
    accept(RID, "t-held", "hi", run_id="r1")
    held = lease_of(RID, "t-held")
    second = accept(RID, "t-held", "more", run_id="r2", process="p2")
    after = lease_of(RID, "t-held")
    assert (second.action, second.run_id) == ("deliver", "r1")
    assert (after.owner_run_id, after.token, after.expires_at, after.owner_process) == (
        "r1", 1, held.expires_at, "p1")
    assert not Run.objects.filter(id="r2").exists()
    assert ThreadInput.objects.get(signal__contents="more").status == "pending"


@pytest.mark.django_db(transaction=True)
def test_concurrent_acquires_give_exactly_one_owner():
    """Eight threads (eight database connections) wake the same idle thread at once."""
    results: list[Acceptance] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def contend(n: int) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(accept(RID, "t-contend", f"input {n}", run_id=f"r{n}", process=f"p{n}"))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=contend, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    wakes = [r for r in results if r.action == "wake"]
    assert len(results) == 8 and len(wakes) == 1
    assert {r.run_id for r in results} == {wakes[0].run_id}
    lease = lease_of(RID, "t-contend")
    assert (lease.owner_run_id, lease.token) == (wakes[0].run_id, 1)
    assert ThreadInput.objects.filter(thread_id=lease.thread_id, status="pending").count() == 7


@pytest.mark.django_db(transaction=True)
def test_renew_extends_the_lease_of_the_current_owner_only():
    accept(RID, "t-renew", "hi", run_id="r1", ttl_ms=1000)
    key = thread_key(RID, "t-renew")
    first_expiry = lease_of(RID, "t-renew").expires_at
    assert lease_renew(key=key, run_id="r1", token=1, ttl_ms=TTL_MS) == Renewal(ok=True)
    renewed = lease_of(RID, "t-renew").expires_at
    assert renewed > first_expiry
    assert lease_renew(key=key, run_id="r1", token=2, ttl_ms=TTL_MS).ok is False
    assert lease_renew(key=key, run_id="other", token=1, ttl_ms=TTL_MS).ok is False
    assert lease_of(RID, "t-renew").expires_at == renewed
    run_abort_request(key=key)
    assert lease_renew(key=key, run_id="r1", token=1, ttl_ms=TTL_MS) == Renewal(ok=True, abort=True)


@pytest.mark.django_db(transaction=True)
def test_release_frees_the_thread_once_and_only_for_the_owner():
    accept(RID, "t-release", "hi", run_id="r1")
    assert finish(RID, "t-release", "r1", token=2) is None  # wrong token: nothing changes
    assert lease_of(RID, "t-release").owner_run_id == "r1"
    assert finish(RID, "t-release", "r1", token=1) is None  # released: nothing waits
    lease = lease_of(RID, "t-release")
    assert (lease.owner_run_id, lease.status, lease.expires_at, lease.token) == (None, "idle", None, 1)
    assert finish(RID, "t-release", "r1", token=1) is None
    assert lease_renew(key=lease.thread_id, run_id="r1", token=1, ttl_ms=TTL_MS).ok is False
    assert accept(RID, "t-release", "again", run_id="r2").lease.token == 2


@pytest.mark.django_db(transaction=True)
def test_transfer_hands_the_lease_to_the_next_run_for_waiting_inputs():
    accept(RID, "t-transfer", "hi", run_id="r1")
    accept(RID, "t-transfer", "delivered late")  # after the run's last step: waits
    queued = accept(RID, "t-transfer", "queued", mode="queue")
    nxt = finish(RID, "t-transfer", "r1", token=1, next_run="r2")
    assert (nxt.run_id, nxt.token) == ("r2", 2)
    assert [s["contents"] for s in nxt.signals] == ["delivered late"]
    lease = lease_of(RID, "t-transfer")
    assert (lease.owner_run_id, lease.token, lease.status) == ("r2", 2, "running")
    assert finish(RID, "t-transfer", "r1", token=1) is None  # the old owner can no longer end it
    queued_run = finish(RID, "t-transfer", "r2", token=2, next_run="unused")
    assert (queued_run.run_id, queued_run.token) == (queued.run_id, 3)  # a queued input keeps its run id
    assert [s["contents"] for s in queued_run.signals] == ["queued"]
    assert finish(RID, "t-transfer", queued.run_id, token=3) is None
    assert lease_of(RID, "t-transfer").owner_run_id is None
    assert set(ThreadInput.objects.filter(thread_id=lease.thread_id).values_list("status", flat=True)) == {"consumed"}


@pytest.mark.django_db(transaction=True)
def test_suspend_and_resume_are_compare_and_set():
    accept(RID, "t-suspend", "hi", run_id="r1")
    key = thread_key(RID, "t-suspend")
    run_suspend(key=key, run_id="r1", token=2, last_seq=0)
    assert lease_of(RID, "t-suspend").status == "running"
    run_suspend(key=key, run_id="r1", token=1, last_seq=0)
    lease = lease_of(RID, "t-suspend")
    assert (lease.status, lease.expires_at) == ("suspended", None)
    assert accept(RID, "t-suspend", "while suspended").action == "deliver"  # the thread stays held
    resumed = run_resume(run_id="r1", process_id="p2", ttl_ms=TTL_MS)
    assert (resumed.run_id, resumed.token) == ("r1", 2)
    assert run_resume(run_id="r1", process_id="p3", ttl_ms=TTL_MS) is None
    assert lease_of(RID, "t-suspend").owner_process == "p2"


@pytest.mark.django_db(transaction=True)
def test_an_expired_lease_is_taken_over_with_a_new_token():
    accept(RID, "t-expired", "hi", run_id="r1")
    expire(RID, "t-expired")
    took = accept(RID, "t-expired", "after the crash", run_id="r2", process="p2")
    assert (took.action, took.run_id, took.lease.token) == ("wake", "r2", 2)
    assert lease_of(RID, "t-expired").owner_process == "p2"


# -- fencing: a stale owner cannot write after losing the lease ------------------------------------
def taken_over(thread_id: str) -> tuple[str, dict]:
    """r1 (token 1) owned the thread; its lease expired and r2 (token 2) took it over."""
    accept(RID, thread_id, "first", run_id="r1")
    expire(RID, thread_id)
    assert accept(RID, thread_id, "takeover", run_id="r2", process="p2").lease.token == 2
    return thread_key(RID, thread_id), lease_of(RID, thread_id)


@pytest.mark.django_db(transaction=True)
def test_a_stale_owner_cannot_drain_inputs():
    key, _ = taken_over("t-fence-drain")
    accept(RID, "t-fence-drain", "for the new owner")
    assert inputs_take(key=key, run_id="r1", token=1) == []
    assert inputs_take(key=key, run_id="r2", token=1) == []
    assert ThreadInput.objects.get(signal__contents="for the new owner").status == "pending"
    taken = inputs_take(key=key, run_id="r2", token=2)
    assert [t["signal"]["contents"] for t in taken] == ["for the new owner"]
    assert ThreadInput.objects.get(signal__contents="for the new owner").consumed_by == "r2"


@pytest.mark.django_db(transaction=True)
def test_a_stale_owner_cannot_append_events():
    key, lease = taken_over("t-fence-events")
    assert events_append(key=key, token=1, events=[chunk(lease.last_seq + 1, "r1")]) is False
    assert ThreadEvent.objects.filter(thread__thread_id=key.split("\x1f")[1]).count() == 0
    assert lease_of(RID, "t-fence-events").last_seq == lease.last_seq
    assert events_append(key=key, token=2, events=[chunk(lease.last_seq + 1, "r2")]) is True
    assert list(ThreadEvent.objects.filter(thread__thread_id=key.split("\x1f")[1]).values_list("run_id", flat=True)) == ["r2"]


@pytest.mark.django_db(transaction=True)
def test_a_stale_owner_cannot_renew_finish_or_suspend():
    key, before = taken_over("t-fence-end")
    assert lease_renew(key=key, run_id="r1", token=1, ttl_ms=TTL_MS).ok is False
    answer = {"id": "stale-answer", "role": "assistant", "content": [{"type": "text", "text": "late"}],
              "createdAt": timezone.now().isoformat()}
    record = {"id": "r1", "agent_id": "worker", "resource_id": RID, "thread_id": "t-fence-end", "status": "completed",
              "finish_reason": "stop", "started_at": timezone.now().isoformat(),
              "finished_at": timezone.now().isoformat(), "steps": 1}
    stale_end = run_finish(key=key, run_id="r1", token=1, last_seq=99, new_run_id="r3",
                                        process_id="p1", ttl_ms=TTL_MS, events=[chunk(before.last_seq + 1, "r1")],
                                        messages=[answer], record=record)
    assert stale_end == RunEnd(fenced=True)
    # its answer and its record are not written: the new owner answers the inputs it took
    assert not Message.objects.filter(message_id="stale-answer").exists()
    assert Run.objects.get(id="r1").status == "failed"
    run_suspend(key=key, run_id="r1", token=1, last_seq=99, events=[chunk(before.last_seq + 1, "r1")])
    after = lease_of(RID, "t-fence-end")
    assert (after.owner_run_id, after.token, after.status, after.last_seq, after.expires_at) == (
        "r2", 2, "running", before.last_seq, before.expires_at)
    assert ThreadEvent.objects.filter(thread__thread_id=key.split("\x1f")[1]).count() == 0
