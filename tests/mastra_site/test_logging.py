"""Logs (README, Configuration): ``LOG_FORMAT=json`` writes one JSON object per line with the time,
level, logger, message and exception, and the request id, run id and thread id when known
(``mastra_site.logging_context``); the default stays text for people."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from channels.testing import HttpCommunicator
from django.conf import settings
from pythonjsonlogger.json import JsonFormatter

from agents.runtime import Agent, InMemoryMemory, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from mastra_site.logging_context import LogContextFilter

ROOT = Path(__file__).resolve().parents[2]

LOGS = """
import logging
import django
django.setup()
logging.getLogger("mastra.probe").warning("plain %s", "line")
try:
    1 / 0
except ZeroDivisionError:
    logging.getLogger("mastra.probe").exception("it failed")
"""


# a request through each HTTP client the provider SDKs and the channels use, to a local server
REQUESTS = """
import http.server, logging, threading
import django
django.setup()
import httpx, httpx2

class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Ok)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_port}/ping"
assert httpx.get(url).status_code == httpx2.get(url).status_code == 200
logging.getLogger("httpx2").warning("a client warning")
logging.getLogger("mastra.probe").info("done")
"""

# lines of Django's own loggers: the development server's request line, a 404
DJANGO_LINES = """
import logging
import django
django.setup()
logging.getLogger("django.channels.server").info("HTTP GET /api/agents 200 [0.01, 127.0.0.1:5000]")
logging.getLogger("django.request").warning("Not Found: /nowhere")
"""

LOG_ENV = ("LOG_FORMAT", "LOG_LEVEL", "LOG_LEVEL_HTTP_CLIENT", "DEBUG")


def run_logs(code: str = LOGS, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in LOG_ENV}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=60)


def test_json_logs_are_one_object_per_line_with_the_fields():
    proc = run_logs(LOG_FORMAT="json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [(line["level"], line["logger"], line["message"]) for line in lines] == [
        ("WARNING", "mastra.probe", "plain line"), ("ERROR", "mastra.probe", "it failed")]
    assert all(line["timestamp"].endswith("+00:00") for line in lines)
    assert "exception" not in lines[0]
    assert lines[1]["exception"].startswith("Traceback (most recent call last):")
    assert lines[1]["exception"].endswith("ZeroDivisionError: division by zero")
    assert not {"request_id", "run_id", "thread_id"} & set(lines[0])  # only when known


def test_text_logs_are_the_default():
    proc = run_logs()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == "plain line"


@pytest.mark.parametrize("debug", ["true", "false"])
def test_djangos_lines_are_written_once(debug):
    proc = run_logs(DJANGO_LINES, DEBUG=debug)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["HTTP GET /api/agents 200 [0.01, 127.0.0.1:5000]", "Not Found: /nowhere"]
    proc = run_logs(DJANGO_LINES, DEBUG=debug, LOG_FORMAT="json")
    assert [(line["logger"], line["message"]) for line in map(json.loads, proc.stderr.splitlines())] == [
        ("django.channels.server", "HTTP GET /api/agents 200 [0.01, 127.0.0.1:5000]"),
        ("django.request", "Not Found: /nowhere")]


def test_http_client_requests_are_not_logged_unless_asked():
    proc = run_logs(REQUESTS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["a client warning", "done"]


def test_http_client_requests_are_logged_at_their_own_level():
    proc = run_logs(REQUESTS, LOG_LEVEL_HTTP_CLIENT="info")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 4 and lines[2:] == ["a client warning", "done"]
    assert all(line.startswith("HTTP Request: GET http://127.0.0.1:") and line.endswith('/ping "HTTP/1.0 200 OK"')
               for line in lines[:2])


def test_the_http_clients_level_is_never_below_the_sites():
    proc = run_logs(REQUESTS, LOG_LEVEL="error", LOG_LEVEL_HTTP_CLIENT="debug")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert run_logs(REQUESTS, LOG_LEVEL_HTTP_CLIENT="chatty").stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: LOG_LEVEL_HTTP_CLIENT must be one of DEBUG, INFO, WARNING, "
        "ERROR, CRITICAL, not 'chatty'")


def test_an_unknown_log_format_is_refused():
    proc = run_logs(LOG_FORMAT="xml")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: LOG_FORMAT must be one of text, json, not 'xml'")


@pytest.fixture
def json_lines():
    """The JSON lines of every record logged during the test, formatted as ``LOG_FORMAT=json`` does."""
    import mastra_site.asgi  # noqa: F401 (its django.setup() configures logging anew: first)

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(LogContextFilter())
    handler.setFormatter(JsonFormatter(**{k: v for k, v in settings.LOGGING["formatters"]["json"].items()
                                          if k != "()"}))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)


async def api_call(headers: list) -> dict:
    from mastra_site.asgi import application

    return await HttpCommunicator(application, "GET", "/api/agents", headers=[(b"host", b"testserver"), *headers]
                                  ).get_response(timeout=10)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)  # the site's handler closes old connections
async def test_an_api_requests_log_line_carries_its_request_id(json_lines):
    response = await api_call([(b"x-request-id", b"edge-7f3a-42")])
    assert response["status"] == 401
    assert dict(response["headers"])[b"X-Request-ID"] == b"edge-7f3a-42"
    [line] = [line for line in json_lines() if line["logger"] == "django.request"]
    assert (line["level"], line["message"], line["request_id"]) == ("WARNING", "Unauthorized: /api/agents",
                                                                    "edge-7f3a-42")


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)  # the site's handler closes old connections
async def test_a_request_without_a_sane_request_id_gets_a_new_one(json_lines):
    first = await api_call([(b"x-request-id", b"no spaces; please")])
    second = await api_call([])
    ids = [dict(r["headers"])[b"X-Request-ID"].decode() for r in (first, second)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids) and ids[0] != ids[1]
    assert [line["request_id"] for line in json_lines() if line["logger"] == "django.request"] == ids


@pytest.mark.asyncio
async def test_a_runs_log_lines_carry_its_run_id_and_thread_id(json_lines):
    def lookup(args):
        logging.getLogger("tests.tool").warning("looking up %s", args["city"])
        return {"temp": 31}

    tool = create_tool(id="lookup", input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
                       execute=lookup)
    model = ScriptedModel([tool_step(("call-1", "lookup", {"city": "Lagos"})), text_step("31 degrees.")])
    agent = Agent(id="weather", instructions="x", model=model, tools={"lookup": tool}, memory=InMemoryMemory())
    result = await agent.generate("Weather?", run_id="run-7", memory={"resource": "u1", "thread": "t-9"})
    assert result.text == "31 degrees."
    logging.getLogger("tests.tool").warning("after the run")
    tool_line, after = [line for line in json_lines() if line["logger"] == "tests.tool"]
    assert (tool_line["message"], tool_line["run_id"], tool_line["thread_id"]) == ("looking up Lagos", "run-7", "t-9")
    assert "run_id" not in after and "thread_id" not in after
