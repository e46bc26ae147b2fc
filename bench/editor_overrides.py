"""What the admin editor adds to a run: ``generate`` with the offline ``local/echo`` model.

    .venv/bin/python bench/editor_overrides.py [--n 500] [--warmup 20]

Cases (N sequential calls each, after warm-up calls):
  code       an agent whose Mastra has no overrides provider (the code's definition)
  published  the same agent behind ``EditorOverrides()`` with a published version (the cached path:
             one database read of the generation per ``MASTRA_EDITOR_REFRESH_MS``)
  draft      the same, each call selecting the draft (``versions={"agents": {id: {"status": "draft"}}}``:
             one database read per call)

Prints one JSON line per case: case, n, median_ms, p95_ms, per_s. Django is set up as in
``bench/agent_overhead.py`` (a temporary SQLite file unless ``DATABASE_URL`` is set).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_overhead import setup_django  # noqa: E402


async def measure(name: str, call, n: int, warmup: int) -> dict:
    for _ in range(warmup):
        await call()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"case": name, "n": n, "median_ms": round(statistics.median(times), 3),
            "p95_ms": round(times[int(len(times) * 0.95) - 1], 3), "per_s": round(1000 / statistics.mean(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    setup_django()
    from asgiref.sync import sync_to_async

    from agents.editor.overrides import EditorOverrides
    from agents.editor.services import version_publish, version_save
    from agents.editor.sync import agents_sync
    from agents.runtime import Agent, Mastra

    plain = Agent(id="bench-plain", instructions="Be brief.", model="local/echo")
    Mastra(agents={"bench-plain": plain})
    edited = Agent(id="bench-edited", instructions="Be brief.", model="local/echo")
    site = Mastra(agents={"bench-edited": edited}, overrides=EditorOverrides())

    async def run() -> None:
        await sync_to_async(agents_sync)(mastra=site)
        v1 = await sync_to_async(version_save)(agent_id="bench-edited", changes={"instructions": "Be very brief."},
                                               based_on_id=None, site_tools=[])
        await sync_to_async(version_publish)(version_id=v1.pk)
        draft = {"agents": {"bench-edited": {"status": "draft"}}}
        cases = [("code", lambda: plain.generate("hi")), ("published", lambda: edited.generate("hi")),
                 ("draft", lambda: edited.generate("hi", versions=draft))]
        for name, call in cases:
            print(json.dumps(await measure(name, call, args.n, args.warmup)), flush=True)

    asyncio.run(run())


if __name__ == "__main__":
    main()
