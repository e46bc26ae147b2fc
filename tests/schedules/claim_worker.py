"""A scheduler process of the racing test: ``python -m tests.schedules.claim_worker <start-iso>
<step-s> <steps>`` runs the scheduler's tick at each simulated instant (an injected clock), and
runs the fires it claims. Fires append their claim id to ``$FIRE_LOG`` (the workflow
``nightly`` of ``race_site``), so a fire run twice shows twice."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import datetime, timedelta

import django


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ["MASTRA"] = "tests.schedules.race_site:mastra"
    os.environ["MASTRA_SCHEDULE_SCHEDULER"] = "true"
    django.setup()
    from schedules.runner import drain_fires, schedules_tick

    start, step, steps = datetime.fromisoformat(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])

    async def run() -> None:
        for i in range(steps):
            now = start + timedelta(seconds=step * i)
            await schedules_tick(now=now, clock=lambda: now)
            await drain_fires()

    asyncio.run(run())


if __name__ == "__main__":
    main()
