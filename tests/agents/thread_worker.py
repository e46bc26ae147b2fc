"""A thread-runtime process for the multi-process tests (``tests/agents/test_thread_processes.py``).

Started as ``python thread_worker.py`` with ``DJANGO_SETTINGS_MODULE``, ``DATABASE_URL``,
``REDIS_URL`` (optional), ``MASTRA_THREAD_LEASE_TTL_MS`` and ``MASTRA=tests.agents.thread_process_agents:mastra``.
It builds the process's thread runtime as the site does (``agents.apps.build_thread_runtime``), prints
``{"event": "ready", ...}`` and then serves one JSON command per stdin line, each answered by one JSON
line on stdout with the same ``id`` (commands run concurrently; runs go on in the background):

- ``{"op": "send", "agent", "text", "resource_id", "thread_id", "mode": "send"|"queue", "wait": bool,
  "marker": path}`` → ``{"action", "run_id", "signal_id", "queued"}``; ``marker`` is a file written once
  the call returned; with ``wait`` a ``wake`` answers after its run ended (``text``, ``finish_reason``);
- ``{"op": "abort", "agent", "resource_id", "thread_id"}`` → ``{"aborted": bool}``;
- ``{"op": "recover"}`` → ``{"run_ids": [...]}`` (runs started here for expired or ownerless threads);
- ``{"op": "idle", "timeout"}`` → waits for this process's runs to end → ``{"active": [...]}``;
- ``{"op": "subscribe", "agent", "resource_id", "thread_id", "path"}`` → ``{}`` once subscribed; every
  chunk the subscription then receives is appended to ``path`` as one JSON line, as it arrives;
- ``{"op": "exit"}``.

``THREAD_TEST_STALL_EVENTS_AFTER=N``: after N writes to the event log, this process's writes never
complete (its runs go on and hand chunks to subscribers that never reach the log) — a process that
dies between handing out a chunk and logging it, made deterministic for the crash tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mastra_site.settings")
django.setup()

from agents.registry import get_mastra  # noqa: E402
from agents.runtime.threads import get_thread_runtime  # noqa: E402


def emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def handle(runtime, command: dict, outputs: dict) -> dict:
    op = command["op"]
    mastra = get_mastra()
    if op == "send":
        agent = mastra.get_agent(command.get("agent", "worker"))
        method = agent.queue_message if command.get("mode") == "queue" else agent.send_message
        result = await method(command["text"], resource_id=command["resource_id"], thread_id=command["thread_id"])
        if command.get("marker"):
            with open(command["marker"], "w") as marker:
                marker.write(str(os.getpid()))
        answer = {"action": result.action, "run_id": result.run_id,
                  "signal_id": (result.signal or {}).get("id")}
        if result.output is not None:
            outputs[result.run_id] = result.output
            if command.get("wait"):
                full = await result.output.get_full_output()
                answer.update(text=full.text, finish_reason=full.finish_reason)
        return answer
    if op == "abort":
        agent = mastra.get_agent(command.get("agent", "worker"))
        return {"aborted": await agent.abort_thread(resource_id=command["resource_id"],
                                                    thread_id=command["thread_id"])}
    if op == "recover":
        return {"run_ids": await runtime.recover()}
    if op == "subscribe":
        agent = mastra.get_agent(command.get("agent", "worker"))
        sub = await agent.subscribe_to_thread(resource_id=command["resource_id"], thread_id=command["thread_id"])
        outputs[("subscription", command["path"])] = asyncio.ensure_future(record(sub, command["path"]))
        return {}
    if op == "idle":
        await runtime.drain_background(timeout=float(command.get("timeout", 10)))
        return {"active": [run.run_id for run in runtime.active.values()]}
    raise ValueError(f"unknown op {op!r}")


async def record(sub, path: str) -> None:
    """Append each chunk ``sub`` receives to ``path`` (one JSON line, one ``write``), as it comes."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        async for chunk in sub.stream:
            os.write(fd, (json.dumps(chunk) + "\n").encode())
    finally:
        os.close(fd)


def stall_event_writes(runtime, after: int) -> None:
    """``THREAD_TEST_STALL_EVENTS_AFTER``: the runtime's writes to the event log after the first
    ``after`` ones wait forever."""
    write, write_many = runtime.store.append_events, runtime.store.append_events_many
    done = 0

    async def stalled(**kwargs):
        nonlocal done
        if done >= after:
            await asyncio.Event().wait()
        done += 1
        return await write(**kwargs)

    async def stalled_many(**kwargs):  # the runs' grouped writes (``EventLogWriter``), counted as one
        nonlocal done
        if done >= after:
            await asyncio.Event().wait()
        done += 1
        return await write_many(**kwargs)

    runtime.store.append_events = stalled
    runtime.store.append_events_many = stalled_many


async def main() -> None:
    runtime = get_thread_runtime()
    if os.environ.get("THREAD_TEST_STALL_EVENTS_AFTER"):
        stall_event_writes(runtime, int(os.environ["THREAD_TEST_STALL_EVENTS_AFTER"]))
    outputs: dict = {}
    # open the database connection (and the channel) now, so that the first command is not slowed down
    await runtime.store.thread_state(key="warm\x1fup")
    if runtime.pubsub is not None:
        await runtime.pubsub._ensure_channel()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    emit({"event": "ready", "pid": os.getpid(), "process_id": runtime.process_id,
          "pubsub": type(runtime.pubsub).__name__ if runtime.pubsub else None})
    tasks = set()

    async def serve(command: dict) -> None:
        try:
            emit({"id": command.get("id"), "ok": True, **await handle(runtime, command, outputs)})
        except Exception as exc:
            emit({"id": command.get("id"), "ok": False, "error": repr(exc), "trace": traceback.format_exc()})

    while True:
        line = await reader.readline()
        if not line:
            break
        command = json.loads(line)
        if command["op"] == "exit":
            emit({"id": command.get("id"), "ok": True})
            break
        task = asyncio.ensure_future(serve(command))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if runtime.pubsub is not None:
        await runtime.pubsub.close()


if __name__ == "__main__":
    asyncio.run(main())
