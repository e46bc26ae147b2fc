"""Per-call overhead of the agent runtime with the offline ``local/echo`` model (no delay).

    .venv/bin/python bench/agent_overhead.py [--n 500] [--warmup 20] [--cases a,b,d]

Cases (N sequential calls each, after warm-up calls):
  a  ``generate`` without memory (one model step)
  b  ``generate`` on one memory thread (``Memory(last_messages=10)``): load history, save messages,
     record the run — the database round trips of a chat turn
  d  ``generate`` with a three-step tool loop (tool call, tool call, text), no memory; the tool is
     a pure sync function marked ``quick`` (it runs on the event loop, as Mastra's does)

Prints a first line on the machine and interpreter (``bench/machine.py``), then one JSON line per
case: case, n, median_ms, p95_ms, per_s, max_rss_mb, and cpu_ms: the process's CPU time per call,
with cpu_ms_by_thread its split (``loop``, the event loop's thread; ``worker``, where the database
calls run; ``writers``, the ledger's and the traces' rows written in the background; ``other``:
``bench/machine.py``'s ``CpuMeter``), from after the warm-up to the last call's rows written.
The script sets up Django itself:
``DJANGO_SETTINGS_MODULE=mastra_site.settings``, ``DEBUG=false`` unless ``DEBUG`` is set (no SQL
query log, as in production) and, unless ``DATABASE_URL`` is set, a temporary SQLite file, migrated
quietly. ``MASTRA_CPU_AFFINITY`` applies as in a web process (``auto`` or a CPU list keeps this
process on one CPU, ``mastra_site.cpu_affinity``), and so do ``MASTRA_GC_YOUNG_OBJECTS`` and
``MASTRA_GC_FULL_EVERY`` (the collector's thresholds, ``agents.heap``). Timings are wall clock: run
it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ("a", "b", "d")


def setup_django() -> str | None:
    """Configure Django on a temporary SQLite file (unless DATABASE_URL is set); returns the temp dir."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mastra_site.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # measure what a deployment pays: DEBUG logs every SQL statement (on SQLite it even runs an extra
    # query per statement to quote its parameters). DEBUG=true measures the development setup.
    os.environ.setdefault("DEBUG", "false")
    tmpdir = None
    if not os.environ.get("DATABASE_URL"):
        tmpdir = tempfile.mkdtemp(prefix="mastra-bench-")
        os.environ["DATABASE_URL"] = f"sqlite:///{tmpdir}/bench.sqlite3"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from agents.heap import heap_thresholds
    from mastra_site.cpu_affinity import apply_cpu_affinity

    apply_cpu_affinity()  # as the ASGI application applies it in a web process
    heap_thresholds()  # the collector's thresholds as in a web process
    return tmpdir


def build_cases(selected: list[str]):
    from agents.memory import Memory
    from agents.runtime import Agent, create_tool

    def ping(input: dict) -> dict:
        return {"pong": input.get("n", 0)}

    ping_tool = create_tool(id="ping", description="Answer pong.",
                            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
                            execute=ping, quick=True)  # a pure function: runs on the event loop
    plain = Agent(id="bench-plain", instructions="You are a benchmark.", model="local/echo")
    with_memory = Agent(id="bench-memory", instructions="You are a benchmark.", model="local/echo",
                        memory=Memory(last_messages=10))
    with_tools = Agent(id="bench-tools", instructions="You are a benchmark.", model="local/echo",
                       tools={"ping": ping_tool})
    thread = {"resource": "bench-user", "thread": f"bench-thread-{os.getpid()}-{time.time_ns()}"}
    tool_prompt = '/tool ping {"n": 1}\n/tool ping {"n": 2}'

    async def case_a(i: int):
        return await plain.generate(f"hello {i}")

    async def case_b(i: int):
        return await with_memory.generate(f"hello {i}", memory=thread)

    async def case_d(i: int):
        return await with_tools.generate(tool_prompt)

    cases = {"a": case_a, "b": case_b, "d": case_d}
    return {name: cases[name] for name in selected}


def check(name: str, result) -> None:
    if result.error is not None or result.finish_reason != "stop":
        raise SystemExit(f"case {name}: the run failed: {result.finish_reason} {result.error!r}")
    if name == "d" and len(result.steps) != 3:
        raise SystemExit(f"case {name}: expected 3 steps, got {len(result.steps)}")


async def measure(name: str, call, n: int, warmup: int) -> dict:
    from bench.machine import runtime_cpu_meter, writers_flushed

    for i in range(warmup):
        check(name, await call(i))
    writers_flushed()
    meter = runtime_cpu_meter()
    meter.start()
    times = []
    perf = time.perf_counter
    for i in range(n):
        start = perf()
        result = await call(warmup + i)
        times.append(perf() - start)
        check(name, result)
    writers_flushed()
    cpu = meter.stop(n)
    times.sort()
    total = sum(times)
    return {
        "case": name, "n": n,
        "median_ms": round(statistics.median(times) * 1000, 4),
        "p95_ms": round(times[min(n - 1, int(round(0.95 * (n - 1))))] * 1000, 4),
        "per_s": round(n / total, 1) if total else None,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        **cpu,
    }


async def main_async(args) -> None:
    for name, call in build_cases(args.cases).items():
        print(json.dumps(await measure(name, call, args.n, args.warmup)), flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500, help="measured calls per case (default 500)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls per case (default 20)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases (default a,b,d)")
    args = parser.parse_args(argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in args.cases if c not in CASES]
    if unknown or not args.cases:
        parser.error(f"unknown case(s) {unknown}; choose from {', '.join(CASES)}")
    if args.n < 1 or args.warmup < 0:
        parser.error("--n must be >= 1 and --warmup >= 0")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    tmpdir = setup_django()
    from bench.machine import print_machine

    print_machine()  # pinned by now, as the calls will be
    try:
        asyncio.run(main_async(args))
    finally:
        from agents.batch_writer import writers_shutdown

        writers_shutdown()  # the ledger's and the traces' queued rows, while the database exists
        if tmpdir is not None:
            import shutil

            shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    main()
