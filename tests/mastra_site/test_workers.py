"""Background work (``mastra_site.workers``): the job loop, the serving hooks, and recovery of a dead
owner's inputs by a ``run_workers`` process and by a daphne process that received no request."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.models import Run, ThreadInput
from agents.runtime.providers.sdk import close_with_loop
from mastra_site.workers import Job, Workers, WorkersMiddleware

from tests.agents import thread_process_agents as support
from tests.agents.test_thread_processes import (CRASH_TTL_MS, ROOT, spawn, user_texts,  # noqa: F401
                                                wait_until)


# -- the job loop ---------------------------------------------------------------------------------
async def test_a_job_runs_at_start_then_every_interval_until_stopped():
    runs = []

    async def tick():
        runs.append(asyncio.get_running_loop().time())

    workers = Workers([Job("tick", tick, interval=lambda: 0.05)])
    workers.start()
    await asyncio.sleep(0.01)
    assert len(runs) == 1  # at once, before the first interval
    await asyncio.sleep(0.13)
    assert len(runs) == 3
    await workers.stop()
    assert not workers.running
    count = len(runs)
    await asyncio.sleep(0.1)
    assert len(runs) == count


async def test_a_failing_job_is_logged_and_runs_again(caplog):
    calls = []

    async def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database went away")

    workers = Workers([Job("flaky", flaky, interval=lambda: 0.02)])
    workers.start()
    await asyncio.sleep(0.07)
    await workers.stop()
    assert len(calls) >= 2
    assert "background job flaky failed" in caplog.text and "database went away" in caplog.text


async def test_a_disabled_job_does_not_start_and_start_is_idempotent():
    async def noop():
        return None

    workers = Workers([Job("on", noop, interval=lambda: 10), Job("off", noop, interval=lambda: 10,
                                                                  enabled=lambda: False)])
    workers.start()
    first = workers.tasks["on"]
    workers.start()
    assert list(workers.tasks) == ["on"] and workers.tasks["on"] is first
    await workers.stop()


async def test_lifespan_events_start_and_stop_the_serving_workers(monkeypatch):
    import mastra_site.workers as module

    started = []

    async def job():
        started.append(1)

    monkeypatch.setattr(module, "_serving", Workers([Job("job", job, interval=lambda: 10)]))
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent = []

    async def receive():
        await asyncio.sleep(0.01)
        return next(messages)

    async def send(message):
        sent.append(message["type"])

    async def app(scope, receive, send):  # never reached for lifespan
        raise AssertionError("the lifespan scope is the middleware's")

    class SDKClient:  # a model SDK client the process built on its loop
        closed = False

        async def close(self):
            self.closed = True

    client = close_with_loop(SDKClient())
    await WorkersMiddleware(app)({"type": "lifespan"}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert started == [1] and not module._serving.running
    assert client.closed  # its connections end with the server, not at the interpreter's exit


# -- recovery with no subscriber, in a process of its own --------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env(db_url: str, tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "MASTRA") and not k.startswith("THREAD_TEST_")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DATABASE_URL": db_url,
        "MASTRA": "tests.agents.thread_process_agents:mastra", "MASTRA_THREAD_LEASE_TTL_MS": str(CRASH_TTL_MS),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        "THREAD_TEST_MODEL_LOG": str(tmp_path / "calls.jsonl"), "PYTHONUNBUFFERED": "1",
        "MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S": "3600",
    })
    return env


@contextlib.asynccontextmanager
async def background_process(argv: list[str], env: dict, tmp_path: Path, name: str):
    """A server or worker process, SIGKILLed if the test leaves it running."""
    out = open(tmp_path / f"{name}.out", "wb")
    proc = await asyncio.create_subprocess_exec(*argv, cwd=str(ROOT), env=env, stdout=out,
                                                stderr=asyncio.subprocess.STDOUT)
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        out.close()


async def kill_a_runner_with_inputs_queued_behind_it(spawn, tmp_path, db_url):  # noqa: F811
    runner = await spawn("runner", db_url, ttl_ms=CRASH_TTL_MS, THREAD_TEST_SLOW="1")
    resource_id, thread_id = "workers-user", f"workers-{tmp_path.name}"
    wake = await runner.send("slow: first", resource_id, thread_id)
    assert wake["action"] == "wake"
    queued = [await runner.send(text, resource_id, thread_id, mode="queue") for text in ("second", "third")]
    assert [q["action"] for q in queued] == ["deliver", "deliver"]
    assert len({wake["run_id"], *(q["run_id"] for q in queued)}) == 3  # each queued input is a run of its own
    await wait_until(lambda: support.read_calls(tmp_path / "calls.jsonl"), 15, "the runner's model call")
    await runner.kill()
    return runner, resource_id, thread_id, wake, queued


async def assert_recovered_in(pid: int, runner, tmp_path, resource_id, thread_id, wake, queued):
    log = tmp_path / "calls.jsonl"
    await wait_until(lambda: len(support.read_calls(log)) >= 4, CRASH_TTL_MS / 1000 + 30,
                     "the recovering process to answer every input")
    await asyncio.sleep(0.5)  # nothing more may come
    calls = support.read_calls(log)
    assert [(c["pid"], c["new"]) for c in calls] == [
        (runner.pid, ["slow: first"]),  # the call that died with its process
        (pid, ["slow: first"]),  # answered once more, by the recovering process
        (pid, ["second"]),  # then each queued input, in order, once
        (pid, ["third"]),
    ]

    input_ids = [wake["signal_id"]] + [q["signal_id"] for q in queued]

    def stored():
        runs = {r.id: r.status for r in Run.objects.filter(thread__thread_id=thread_id)}
        inputs = dict(ThreadInput.objects.filter(input_id__in=input_ids).values_list("input_id", "status"))
        return runs, inputs, user_texts(resource_id, thread_id)

    async def settled():
        runs, _, texts = await sync_to_async(stored)()
        return len(runs) == 4 and all(s != "running" for s in runs.values()) and texts

    deadline = asyncio.get_running_loop().time() + 15
    while not await settled():
        assert asyncio.get_running_loop().time() < deadline, "the recovered runs did not finish"
        await asyncio.sleep(0.05)
    runs, inputs, texts = await sync_to_async(stored)()
    assert inputs == {i: "consumed" for i in input_ids}
    assert runs[wake["run_id"]] == "failed"
    assert sorted(status for rid, status in runs.items() if rid != wake["run_id"]) == ["completed"] * 3
    assert texts == ["slow: first", "second", "third"]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_run_workers_answers_a_killed_owners_inputs_once_each_in_order(spawn, tmp_path,  # noqa: F811
                                                                               db_url_for_subprocess):
    runner, resource_id, thread_id, wake, queued = await kill_a_runner_with_inputs_queued_behind_it(
        spawn, tmp_path, db_url_for_subprocess)
    env = process_env(db_url_for_subprocess, tmp_path)
    argv = [sys.executable, str(ROOT / "manage.py"), "run_workers"]
    async with background_process(argv, env, tmp_path, "run_workers") as proc:
        await assert_recovered_in(proc.pid, runner, tmp_path, resource_id, thread_id, wake, queued)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    output = (tmp_path / "run_workers.out").read_text()
    assert "run_workers: running thread-recovery, notification-dispatch" in output
    assert output.rstrip().endswith("run_workers: stopped")


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_daphne_process_that_received_no_request_recovers_a_killed_owners_inputs(  # noqa: F811
        spawn, tmp_path, db_url_for_subprocess):
    runner, resource_id, thread_id, wake, queued = await kill_a_runner_with_inputs_queued_behind_it(
        spawn, tmp_path, db_url_for_subprocess)
    env = process_env(db_url_for_subprocess, tmp_path)
    argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(free_port()), "mastra_site.asgi:application"]
    async with background_process(argv, env, tmp_path, "daphne") as proc:
        await assert_recovered_in(proc.pid, runner, tmp_path, resource_id, thread_id, wake, queued)
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 15)
