"""The chat page's thread-state reducer (``chat/static/chat/state.js``) under ``node --test``:
``tests/js/chat_state.test.mjs`` imports the module by its path, with no npm install."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import require_service

ROOT = Path(__file__).resolve().parents[2]


def test_the_chat_state_reducer_passes_its_node_tests():
    node = require_service("node (tests/js)", shutil.which("node"))
    run = subprocess.run([node, "--test", "--test-reporter=spec", "--test-timeout=30000",
                          "tests/js/chat_state.test.mjs"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-4000:]
