"""The chat page's modules under ``node --test``, with no npm install: the thread-state reducer
(``tests/js/chat_state.test.mjs`` on ``chat/static/chat/state.js``) and the websocket with a scripted
WebSocket (``tests/js/chat_socket.test.mjs`` on ``socket.js``), the voice's words
(``tests/js/chat_voice.test.mjs`` on ``voice.js``), each module imported by its path."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import require_service

ROOT = Path(__file__).resolve().parents[2]


def test_the_chat_page_modules_pass_their_node_tests():
    node = require_service("node (tests/js)", shutil.which("node"))
    run = subprocess.run([node, "--test", "--test-reporter=spec", "--test-timeout=30000",
                          "tests/js/chat_state.test.mjs", "tests/js/chat_socket.test.mjs",
                          "tests/js/chat_voice.test.mjs"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-4000:]
