"""``manage.py run_workers``: a worker-only process running the site's background jobs."""

from __future__ import annotations

import asyncio
import signal

from django.core.management.base import BaseCommand

from agents.runtime.threads import get_thread_runtime
from mastra_site.workers import Workers


class Command(BaseCommand):
    help = ("Run thread recovery and the notification dispatcher until SIGTERM or SIGINT "
            "(a process that serves no request). Runs it starts finish before it exits.")

    def add_arguments(self, parser):
        parser.add_argument("--drain-timeout", type=float, default=30.0,
                            help="seconds to let running thread runs finish on shutdown (default 30)")

    def handle(self, *args, drain_timeout: float, **options):
        asyncio.run(self.serve(drain_timeout))

    async def serve(self, drain_timeout: float) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        workers = Workers()
        workers.start()
        names = ", ".join(workers.tasks) or "no job"
        self.stdout.write(f"run_workers: running {names}", ending="\n")
        self.stdout.flush()
        await stop.wait()
        await workers.stop()
        await get_thread_runtime().drain_background(timeout=drain_timeout)
        self.stdout.write("run_workers: stopped", ending="\n")
