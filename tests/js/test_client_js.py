"""``@mastra/client-js`` (pinned in tests/js/package.json) against a live server: ``npm ci`` and
``node --test`` on ``client.test.mjs``, with a daphne process serving this test run's database."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.agents.api.live import live_server, user_token
from tests.conftest import require_service

HERE = Path(__file__).resolve().parent


@pytest.mark.django_db(transaction=True)
def test_mastra_client_js_works_unchanged(db_url_for_subprocess, tmp_path):
    node, npm = shutil.which("node"), shutil.which("npm")
    require_service("node and npm (tests/js)", node and npm)
    install = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE,
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr
    alice, bob = user_token("alice"), user_token("bob")
    with live_server(db_url_for_subprocess, tmp_path / "daphne.out", MASTRA_API_SEND_RATE="100000/min",
                     MASTRA_SCHEDULE_SCHEDULER="true") as base:
        env = {**os.environ, "MASTRA_BASE_URL": base, "MASTRA_TOKEN": alice, "MASTRA_OTHER_TOKEN": bob}
        # a test that hangs fails by name after 30 s; the runner exits even if a failed test left a
        # subscription open (an open SSE connection would otherwise keep node alive)
        run = subprocess.run([node, "--test", "--test-reporter=spec", "--test-timeout=30000", "--test-force-exit",
                              "client.test.mjs"], cwd=HERE, env=env,
                             capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-4000:] + (tmp_path / "daphne.out").read_text()[-4000:]
