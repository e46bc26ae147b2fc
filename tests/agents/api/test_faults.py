"""The send routes while the channel layer's Redis is down (invariants 1 and 3).

Pub/sub is only a wake-up path: once an input is committed, the response is its acceptance, the
run goes on and its chunks reach subscribers through the event log. The site runs on a Redis of
its own here (a ``redis-server`` started by the test), so that stopping it hurts no other test.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time

import pytest
from asgiref.sync import sync_to_async
from channels_redis.pubsub import RedisPubSubChannelLayer

from agents.models import Message, Run, ThreadInput
from agents.runtime.testing import drain_thread_runtime
from agents.runtime.threads import ThreadRuntime, get_thread_runtime, set_thread_runtime
from agents.threads.pubsub import ChannelLayerPubSub
from agents.threads.store import DjangoThreadStore
from tests.agents.api import site
from tests.agents.api.conftest import Api, body
from tests.agents.thread_harness import collect, ends_run
from tests.conftest import require_service

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

LINES = "\n".join(f"line {n}" for n in range(15))  # the slow agent streams one line per 40 ms


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateRedis:
    """A ``redis-server`` on a port of its own, without persistence; stopped and started again on
    the same port."""

    def __init__(self):
        self.binary = require_service("redis-server", shutil.which("redis-server"))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None


@pytest.fixture
def private_redis():
    redis = PrivateRedis()
    redis.start()
    yield redis
    redis.stop()


def site_runtime(redis_url: str) -> tuple[ThreadRuntime, ChannelLayerPubSub, RedisPubSubChannelLayer]:
    """A site process's thread runtime on the private Redis (as ``agents.apps`` builds it)."""
    layer = RedisPubSubChannelLayer(hosts=[redis_url], prefix="faults")
    pubsub = ChannelLayerPubSub(layer)
    return ThreadRuntime(DjangoThreadStore(), pubsub, lease_ttl_ms=15_000), pubsub, layer


@contextlib.asynccontextmanager
async def two_processes(redis_url: str):
    """This loop's runtime (the one the HTTP API uses) and a second one, a process that only
    subscribes; both on the private Redis."""
    here, here_pubsub, here_layer = site_runtime(redis_url)
    there, there_pubsub, there_layer = site_runtime(redis_url)
    set_thread_runtime(here)
    try:
        yield here, there
    finally:
        await drain_thread_runtime(here, timeout=10)
        await drain_thread_runtime(there, timeout=10)
        set_thread_runtime(None)
        for pubsub, layer in ((here_pubsub, here_layer), (there_pubsub, there_layer)):
            await pubsub.close()
            with contextlib.suppress(Exception):
                await layer.flush()


async def wait_until(predicate, what: str, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def read_runs(sub, runs: int, timeout: float = 20.0) -> list[dict]:
    """The subscription's chunks up to the end of ``runs`` runs."""
    return await collect(sub, ends_run, n=runs, timeout=timeout)


def stored(thread_id: str, resource_id: str = "alice") -> tuple[dict, dict, list]:
    thread_id = f"{resource_id}\x1f{thread_id}"  # the thread's key
    inputs: dict = {}
    for row in ThreadInput.objects.filter(thread_id=thread_id):
        inputs[row.input_id] = inputs.get(row.input_id, 0) + 1
    runs = {r.id: r.status for r in Run.objects.filter(thread_id=thread_id)}
    messages = [(m.role, m.message_id) for m in Message.objects.filter(thread_id=thread_id).order_by("id")]
    return inputs, runs, messages


async def test_with_redis_down_accepted_inputs_answer_2xx_run_and_reach_subscribers_through_the_log(
        alice: Api, private_redis, caplog):
    async with two_processes(private_redis.url) as (here, there):
        # subscribers in both processes while Redis is up
        local_sub = await site.slow.subscribe_to_thread(resource_id="alice", thread_id="t1")
        remote_sub = await there.subscribe(site.slow, "alice", "t1")
        private_redis.stop()

        # a thread nobody listens to yet: its run subscribes this process to the thread
        fresh = await alice.post("/api/agents/echo/send-message", {"message": "hello", "threadId": "t2"})
        assert fresh.status_code == 200, fresh.content
        assert body(fresh)["action"] == "wake"

        # a subscriber that arrives during the outage
        late_sub = await there.subscribe(site.slow, "alice", "t1")
        wake = await alice.post("/api/agents/slow/send-message", {"message": LINES, "threadId": "t1"})
        assert wake.status_code == 200, wake.content
        woken = body(wake)
        assert woken["accepted"] is True and woken["action"] == "wake"
        # into the active run, and behind it
        answers = [await alice.post("/api/agents/slow/signals", {
                       "signal": {"type": "reactive", "contents": "mind the gap"}, "threadId": "t1"}),
                   await alice.post("/api/agents/slow/queue-message", {"message": "queued", "threadId": "t1"}),
                   await alice.post("/api/agents/slow/send-message", {"message": "delivered", "threadId": "t1"})]
        assert [r.status_code for r in answers] == [200, 200, 200], [r.content for r in answers]
        assert [body(r)["action"] for r in answers] == ["deliver", "deliver", "deliver"]
        queued_run = body(answers[1])["runId"]

        # two runs: the woken one (with the delivered inputs) and the queued one
        here_chunks = await read_runs(local_sub, 2)
        there_chunks = await read_runs(remote_sub, 2)
        late_chunks = await read_runs(late_sub, 2)
        await drain_thread_runtime(here, timeout=10)
        for chunks in (there_chunks, late_chunks):
            assert chunks == here_chunks  # every chunk, each once, in order: from the event log
        seqs = [c["seq"] for c in here_chunks]
        assert seqs == sorted(set(seqs))
        assert {c["runId"] for c in here_chunks} == {woken["runId"], queued_run}

        inputs, runs, messages = await sync_to_async(stored)("t2")
        assert inputs == {body(fresh)["signal"]["id"]: 1}
        assert runs == {body(fresh)["runId"]: "completed"}
        assert [role for role, _ in messages] == ["signal", "assistant"]

        ids = [woken["signal"]["id"]] + [body(r)["signal"]["id"] for r in answers]
        inputs, runs, messages = await sync_to_async(stored)("t1")
        assert inputs == {i: 1 for i in ids}  # each input stored once
        assert runs == {woken["runId"]: "completed", queued_run: "completed"}
        # in the order the runs took them: the first run took the signal and the delivered message
        assert [m for m in messages if m[0] == "signal"] == [("signal", ids[i]) for i in (0, 1, 3, 2)]
        assert sum(role == "assistant" for role, _ in messages) >= 2  # both runs' answers in the history

        # the outage was logged once by each runtime and each pub/sub (not once per chunk), and
        # nothing said it was over
        logged = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if "channel layer" in r.getMessage()
                  and r.name.startswith("agents")]
        failures = [entry for entry in logged if entry[1] == "ERROR"]
        assert 1 <= len(failures) <= 4 and len(failures) == len(logged), logged

        # Redis is back: live delivery between processes works again
        private_redis.start()
        await wait_until(lambda: not here.pubsub.failing and not there.pubsub.failing, "the layer to recover")
        again = await alice.post("/api/agents/slow/send-message", {"message": "again", "threadId": "t1"})
        assert again.status_code == 200 and body(again)["action"] == "wake"
        after = await read_runs(remote_sub, 1)
        assert after[0]["seq"] == seqs[-1] + 1 and after[0]["runId"] == body(again)["runId"]
        assert (await read_runs(local_sub, 1)) == after
        for sub in (local_sub, remote_sub, late_sub):
            sub.unsubscribe()
