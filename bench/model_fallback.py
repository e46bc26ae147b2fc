"""A provider outage under load: tool-using runs on a fallback chain while the primary answers only
429 (with ``Retry-After``) and 503, through the real ``openai`` SDK against a local server.

    .venv/bin/python bench/model_fallback.py [--seconds 60] [--concurrency 8]

Cases (each runs ``--concurrency`` runs at a time for ``--seconds``):
  outage   chain [openai (failing), local/echo]: every run must finish on the fallback, its tool
           executed exactly once, no ``error`` chunk
  total    chain [openai (failing), openai (failing)]: every run must fail, with exactly one
           ``error`` chunk each (not one per retry)

Prints one JSON line per case: case, seconds, runs, finished_ok, failed, tool_runs, runs_with_tool_once,
error_chunks, retry_chunks, primary_requests, breaker_skips, models (count per step model), median_ms,
p95_ms. Waits are real but short: the 429s ask 20 ms (``retry-after-ms``), ``Retry-After`` is capped
at 50 ms and the backoff base is 20 ms
(``configure_resilience``), the breaker opens after 5 failures for 1 s. No Django, no database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.runtime import Agent, create_tool  # noqa: E402
from agents.runtime.providers.resilience import configure_resilience  # noqa: E402
from tests.runtime.providers.wire import WireServer, isolate_env, json_reply  # noqa: E402


class Env:
    """``isolate_env`` needs a monkeypatch: this one sets variables for good (the bench's process)."""

    def setenv(self, name: str, value: str) -> None:
        import os

        os.environ[name] = value

    def delenv(self, name: str, raising: bool = True) -> None:
        import os

        os.environ.pop(name, None)


def failing_replies(n: int = 4000) -> list:
    return [json_reply(429, {"error": {"message": "rate limited"}}, headers={"retry-after-ms": "20"}) if i % 2 == 0
            else json_reply(503, {"error": {"message": "overloaded"}}) for i in range(n)]


async def one_run(agent: Agent, index: int, tool_log: Counter) -> dict:
    chunks: list[dict] = []
    started = time.perf_counter()
    result = await agent.generate(f'/tool lookup {{"run": {index}}}', max_steps=3, on_chunk=chunks.append)
    kinds = Counter(c["type"] for c in chunks)
    return {"ok": result.error is None and result.finish_reason == "stop", "failed": result.finish_reason == "error",
            "models": result.models, "errors": kinds["error"], "retries": kinds["data-model-retry"],
            "skips": sum(1 for s in result.steps for a in s.attempts if a["code"] == "circuit_open")
            + sum(1 for a in ((getattr(result.error, "details", None) or {}).get("attempts") or [])
                  if a["code"] == "circuit_open"),
            "tool_once": tool_log[index] == 1, "ms": (time.perf_counter() - started) * 1000}


async def run_case(case: str, seconds: float, concurrency: int) -> dict:
    tool_log: Counter = Counter()

    def lookup(input: dict) -> dict:
        tool_log[input["run"]] += 1
        return {"status": "shipped"}

    tool = create_tool(id="lookup", description="Look up", input_schema={"type": "object"}, execute=lookup)
    with WireServer() as primary, WireServer() as second:
        primary.reply(*failing_replies())
        second.reply(*failing_replies())
        chain = [{"model": {"id": "openai/gpt-test", "url": primary.url + "/v1", "api_key": "sk-bench"},
                  "max_retries": 2}]
        chain.append({"model": "local/echo"} if case == "outage" else
                     {"model": {"id": "openai/gpt-backup", "url": second.url + "/v1", "api_key": "sk-bench"},
                      "max_retries": 1})
        agent = Agent(id="chaos", instructions="Use the lookup tool.", model=chain, tools={"lookup": tool})
        results: list[dict] = []
        deadline = time.perf_counter() + seconds
        counter = iter(range(10**9))

        async def worker() -> None:
            while time.perf_counter() < deadline:
                results.append(await one_run(agent, next(counter), tool_log))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        primary_requests = len(primary.requests)
    times = sorted(r["ms"] for r in results)
    models = Counter(m for r in results for m in r["models"])
    return {"case": case, "seconds": round(elapsed, 1), "runs": len(results),
            "finished_ok": sum(r["ok"] for r in results), "failed": sum(r["failed"] for r in results),
            "tool_runs": sum(tool_log.values()), "runs_with_tool_once": sum(r["tool_once"] for r in results),
            "error_chunks": sum(r["errors"] for r in results), "retry_chunks": sum(r["retries"] for r in results),
            "primary_requests": primary_requests, "breaker_skips": sum(r["skips"] for r in results),
            "models": dict(models), "median_ms": round(statistics.median(times), 1) if times else None,
            "p95_ms": round(times[int(len(times) * 0.95) - 1], 1) if times else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--cases", default="outage,total")
    args = parser.parse_args()
    import logging

    logging.disable(logging.WARNING)
    isolate_env(Env())
    import openai  # noqa: F401  (imported before the clock starts: it takes seconds on a busy machine)

    configure_resilience(retry_base_s=0.02, retry_max_s=0.2, retry_after_max_s=0.05, breaker_failures=5,
                         breaker_cooldown_s=1.0)
    for case in args.cases.split(","):
        print(json.dumps(asyncio.run(run_case(case, args.seconds, args.concurrency))), flush=True)


if __name__ == "__main__":
    main()
