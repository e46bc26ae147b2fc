"""A live server for the tests that talk HTTP over a socket (``@mastra/client-js``, schemathesis):
one daphne process serving ``mastra_site.asgi`` with the agents of ``tests.agents.api.site``, on
this test run's database."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(db_url: str, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "MASTRA")}
    env.update({"DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DATABASE_URL": db_url,
                "MASTRA": "tests.agents.api.site:mastra", "PYTHONUNBUFFERED": "1",
                "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
                "MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S": "3600", "LOG_LEVEL": "WARNING", **extra})
    return env


@contextlib.contextmanager
def live_server(db_url: str, log: Path, **extra: str):
    """Yield the base URL (``http://127.0.0.1:<port>``) of a daphne process; killed at the end."""
    port = free_port()
    argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "mastra_site.asgi:application"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=str(ROOT), env=server_env(db_url, **extra), stdout=out,
                                stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"daphne exited with {proc.returncode}: {log.read_text()[-2000:]}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"daphne did not listen within 30 s: {log.read_text()[-2000:]}")
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def user_token(name: str, *, staff: bool = False) -> str:
    """A user and their API token (sync: call from a sync test or through ``sync_to_async``)."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_user(name, password="pw", is_staff=staff)
    return Token.objects.create(user=user).key
