"""Agents shared by the multi-process thread tests (``MASTRA=tests.agents.thread_process_agents:mastra``).

Every process of a test (the pytest process and the ``thread_worker.py`` subprocesses) imports this
module, so they all run the same agents. The model writes one JSON line per call to the file named
by ``THREAD_TEST_MODEL_LOG`` (appends of one short line are atomic), which lets a test count the
model's calls across processes and check which inputs each call saw.

Environment read at call time (each worker sets its own):

- ``THREAD_TEST_MODEL_LOG``: the call log (no log when unset);
- ``THREAD_TEST_SLOW=1``: a call whose last new input starts with ``slow:`` streams slowly
  (``SLOW_DELTAS`` deltas, ``SLOW_DELAY_S`` apart) — a run that is still going when a test kills its
  process or aborts it;
- ``THREAD_TEST_GATE_DIR`` / ``THREAD_TEST_GATE_COUNT``: the ``racer`` agent's first step waits
  (at most ``GATE_TIMEOUT_S``) until that many files exist in the directory. Each racing worker
  writes one after its ``send_message`` returned (the input is then committed), so the run's first
  model call starts only once both racing inputs are stored.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from agents.memory import Memory
from agents.runtime import Agent, Mastra

SLOW_DELTAS = 400
SLOW_DELAY_S = 0.05
GATE_TIMEOUT_S = 15.0


def text_of(content) -> str:
    """A model message's text: its string, or its text parts joined."""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


def new_inputs(messages: list[dict]) -> list[str]:
    """The user inputs a model call answers: user messages after the last assistant message."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    return [text_of(m["content"]) for m in messages[last + 1:] if m["role"] == "user"]


def log_call(record: dict, *, variable: str = "THREAD_TEST_MODEL_LOG") -> None:
    """Append one line for a model call to the log file named by the environment ``variable``."""
    path = os.environ.get(variable)
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


class LoggedModel:
    """Answers ``ok: <inputs>`` in ``deltas`` pieces and logs every call (see the module docstring)."""

    provider = "test"

    def __init__(self, model_id: str, *, deltas: int = 3, delay_s: float = 0.0):
        self.model_id = model_id
        self.deltas = deltas
        self.delay_s = delay_s

    async def stream(self, request):
        inputs = new_inputs(request.messages)
        slow = os.environ.get("THREAD_TEST_SLOW") == "1" and bool(inputs) and inputs[-1].startswith("slow:")
        log_call({"model": self.model_id, "new": inputs, "slow": slow})
        yield {"type": "response-metadata", "id": None, "model_id": self.model_id, "timestamp": None, "headers": {}}
        count, delay = (SLOW_DELTAS, SLOW_DELAY_S) if slow else (self.deltas, self.delay_s)
        for i in range(count):
            if delay:
                await asyncio.sleep(delay)
            yield {"type": "text-delta", "text": f"ok {i} " if i else "ok: " + " | ".join(inputs) + " "}
        yield {"type": "finish", "finish_reason": "stop",
               "usage": {"input_tokens": 1, "output_tokens": count, "total_tokens": 1 + count}}


class WaitForRacers:
    """Holds the run's first model step until every racing input is stored (test scaffolding)."""

    id = "wait-for-racers"

    async def process_input(self, messages, abort=None, request_context=None, **kwargs):
        gate = os.environ.get("THREAD_TEST_GATE_DIR")
        if not gate:
            return None
        want = int(os.environ.get("THREAD_TEST_GATE_COUNT", "2"))
        deadline = time.monotonic() + GATE_TIMEOUT_S
        while len(list(Path(gate).glob("sent-*"))) < want and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return None


racer = Agent(id="racer", instructions="Answer briefly.", model=LoggedModel("racer"), memory=Memory(),
              input_processors=[WaitForRacers()])
worker = Agent(id="worker", instructions="Answer briefly.", model=LoggedModel("worker"), memory=Memory())
streamer = Agent(id="streamer", instructions="Answer briefly.", model=LoggedModel("streamer", deltas=40, delay_s=0.003),
                 memory=Memory())

mastra = Mastra(agents={"racer": racer, "worker": worker, "streamer": streamer})
