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
- ``{"op": "exit"}``.
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
    if op == "idle":
        await runtime.drain_background(timeout=float(command.get("timeout", 10)))
        return {"active": [run.run_id for run in runtime.active.values()]}
    raise ValueError(f"unknown op {op!r}")


async def main() -> None:
    runtime = get_thread_runtime()
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
