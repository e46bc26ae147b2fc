"""End-to-end helpers: a real daphne server process on a free port against the test database, and
headless Chromium (Debian's ``chromium``) driven by Playwright."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "test-output" / "screenshots"
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def daphne_server(db_url: str, tmp_path: Path, *, asgi: bool = False, **env_extra: str):
    """``manage.py runserver`` (daphne's, serving the static files) on a free loopback port with
    ``MASTRA=tests.chat.site:mastra``; yields its base URL; stops it (and shows its log when the
    test failed to start it). ``asgi=True`` runs ``daphne mastra_site.asgi:application`` instead, as
    production does (the static files from ``STATIC_ROOT`` through WhiteNoise)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_ALLOW_ASYNC_UNSAFE", "PYTEST_CURRENT_TEST")}
    env.update({"DATABASE_URL": db_url, "MASTRA": "tests.chat.site:mastra", "PYTHONPATH": str(ROOT),
                "DJANGO_SETTINGS_MODULE": "tests.settings", **env_extra})
    if db_url.startswith("sqlite"):  # one process on SQLite: a broker would be refused (mastra.E006)
        env.pop("REDIS_URL", None)
        env.pop("CELERY_BROKER_URL", None)
    log_path = tmp_path / f"daphne-{port}.log"
    with open(log_path, "wb") as log:
        command = ([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "mastra_site.asgi:application"]
                   if asgi else
                   [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"])
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited ({proc.returncode}):\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(base + "/login/", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer in {START_TIMEOUT} s:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        wait_for_server_sessions_to_end()


def orm(fn):
    """Run ``fn()`` (ORM calls) in a thread of its own and close that thread's connection.

    Playwright's sync API keeps an event loop running in the test's thread, which makes Django's
    connections there context-local: one opened beside Playwright would never be closed, and
    PostgreSQL refuses to drop a test database with a session left."""
    from django.db import connections

    out: dict = {}

    def work():
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            out["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")


def wait_for_server_sessions_to_end(timeout: float = 10.0) -> None:
    """On PostgreSQL, until the stopped server's database sessions are gone (a backend outlives
    its client by a moment, and a test database with a session left cannot be dropped)."""
    from django.db import connection

    def others() -> int:
        if connection.vendor != "postgresql":
            return 0
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()")
            return cursor.fetchone()[0]

    deadline = time.monotonic() + timeout
    while orm(others) and time.monotonic() < deadline:
        time.sleep(0.1)


@contextmanager
def chromium(tmp_path: Path, args: list[str] = (), profile: str = "chromium-profile"):
    """A fresh headless Chromium profile (a persistent context on a new user-data-dir), launched
    with ``args`` besides the usual ones (a fake microphone, say)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS + list(args),
            viewport={"width": 1280, "height": 800})
        try:
            yield context
        finally:
            context.close()


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
