"""Agents of the fault suite (``MASTRA=tests.system.agents:mastra``), imported by every process of
the layout (two daphne, the Celery worker, Celery beat).

The model is scripted and offline. Every call appends one JSON line to the file named by
``SYSTEM_TEST_MODEL_LOG`` (one ``write`` of one short line on an ``O_APPEND`` file: lines from
several processes never interleave): the process (``pid``), the thread, the new user inputs it was
given (the user messages after the last assistant message) and the time. The suite writes each input
as ``<thread id>|<text>``, so that a call names its thread.

A new input containing ``slow:N`` makes the call stream for N seconds (:data:`DELTAS_PER_S` deltas a
second), so that the run is mid-run when a fault hits; any other call answers at once in three deltas.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path

from agents.memory import Memory
from agents.runtime import Agent, Mastra

DELTAS_PER_S = 20
SLOW = re.compile(r"slow:(\d+(?:\.\d+)?)")


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


def new_inputs(messages: list[dict]) -> list[str]:
    """The user inputs a call answers: the user messages after the last assistant message."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    return [_text(m["content"]) for m in messages[last + 1:] if m["role"] == "user"]


def log_call(record: dict) -> None:
    path = os.environ.get("SYSTEM_TEST_MODEL_LOG")
    if not path:
        return
    line = json.dumps({"pid": os.getpid(), "t": time.time(), **record}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_calls(path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class ScriptedModel:
    """Answers ``ok: <inputs>``; slow when an input says ``slow:N`` (see the module docstring)."""

    provider = "test"
    model_id = "scripted"

    async def stream(self, request):
        inputs = new_inputs(request.messages)
        thread = inputs[0].split("|", 1)[0] if inputs and "|" in inputs[0] else None
        slow = max((float(m.group(1)) for text in inputs for m in [SLOW.search(text)] if m), default=0.0)
        log_call({"thread": thread, "new": inputs, "slow": slow})
        yield {"type": "response-metadata", "id": None, "model_id": self.model_id, "timestamp": None, "headers": {}}
        count = max(3, int(slow * DELTAS_PER_S))
        for i in range(count):
            if slow:
                await asyncio.sleep(1 / DELTAS_PER_S)
            yield {"type": "text-delta", "text": f"ok {i} " if i else "ok: " + " | ".join(inputs) + " "}
        yield {"type": "finish", "finish_reason": "stop",
               "usage": {"input_tokens": 1, "output_tokens": count, "total_tokens": 1 + count}}


ops = Agent(id="ops", name="Ops", instructions="Answer briefly.", model=ScriptedModel(), memory=Memory())

mastra = Mastra(agents={"ops": ops})
