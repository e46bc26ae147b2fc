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
import re

from agents.memory import Memory
from agents.runtime import Agent, Mastra
from tests.agents.thread_process_agents import log_call as shared_log_call
from tests.agents.thread_process_agents import new_inputs

DELTAS_PER_S = 20
SLOW = re.compile(r"slow:(\d+(?:\.\d+)?)")


def log_call(record: dict) -> None:
    shared_log_call(record, variable="SYSTEM_TEST_MODEL_LOG")


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
