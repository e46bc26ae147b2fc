"""docs/deployment.md, run: its marked shell steps in order on loopback, then the site they built.

The test plays the operator on a scratch ``$MASTRA_HOME``: the checkout is this one (a link), the
virtualenv the test run's own, a fresh PostgreSQL database on the test server, Redis keys under a
prefix of their own. It does what the doc leaves to root: writes the env file from
``deploy/mastra.env.example`` as the doc's steps would (a new ``SECRET_KEY``, the database and
Redis URLs, the paths; the offline ``local/echo`` model), and starts the processes the systemd
step would start: each unit's command, environment and directory (``tests/system/walkthrough.py``).
Everything else is the doc's: migrate, collectstatic, createsuperuser, the readiness probe of
each web process and ``check --deploy``.

Then, as nginx would forward them (``Host: mastra.example.com``, ``X-Forwarded-Proto: https``, no
TLS here): plain HTTP is redirected to HTTPS, the login page names its static files by hashed names
that answer 200, ``/readyz`` is ready on both web processes, the account the doc's
``createsuperuser`` made signs in, and a message sent over the chat websocket to one web process is
answered, and heard word for word on the other one through Redis. The env file's production
settings are the example's, unchanged: ``DEBUG`` off, a public host, HTTPS, HSTS, two processes.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.chat.browser import free_port
from tests.deploy.units import ENV_EXAMPLE, HOME, NGINX, env_file
from tests.system.walkthrough import (ROOT, VARIABLES, WalkthroughDrift, blocks, doc_variables, run_script, segments,
                                      unit_processes)

ADMIN = {"DJANGO_SUPERUSER_USERNAME": "admin", "DJANGO_SUPERUSER_EMAIL": "ops@example.com",
         "DJANGO_SUPERUSER_PASSWORD": "walkthrough-" + secrets.token_urlsafe(12)}
START_TIMEOUT = 60.0
HASHED = re.compile(r"\.[0-9a-f]{12}\.[A-Za-z0-9]+$")


# -- the places ------------------------------------------------------------------------------------
@pytest.fixture
def fresh_database(postgres_db):
    """A database of the test's own on the test server (``migrate`` must start from nothing)."""
    import psycopg

    name = f"walkthrough_{uuid.uuid4().hex[:12]}"
    admin_url = postgres_db.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url.replace("postgres://", "postgresql://", 1), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_db.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin_url.replace("postgres://", "postgresql://", 1), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def redis_prefix(redis_url):
    """A key prefix of the test's own on the test Redis (``MASTRA_CHANNEL_PREFIX``), its keys deleted after."""
    import redis

    prefix = f"walkthrough-{uuid.uuid4().hex[:12]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"{prefix}*", count=1000):
        client.delete(key)
    client.close()


def virtualenv() -> Path:
    """The test run's virtualenv, standing in for ``$MASTRA_HOME/venv``."""
    venv = Path(sys.prefix)
    missing = [name for name in ("pyvenv.cfg", "bin/python", "bin/daphne", "bin/celery") if not (venv / name).exists()]
    if missing:
        pytest.fail(f"the walkthrough needs the tests to run from a virtualenv with daphne and celery; "
                    f"{venv} lacks {missing}")
    return venv


def write_env_file(path: Path, *, home: Path, database_url: str, redis_url: str, prefix: str) -> dict[str, str]:
    """``deploy/mastra.env.example`` as the doc's env-file step leaves it, for this machine."""
    example = env_file(ENV_EXAMPLE)
    values = {"SECRET_KEY": secrets.token_urlsafe(50), "DATABASE_URL": database_url, "REDIS_URL": redis_url,
              "MASTRA_CHANNEL_PREFIX": prefix,
              "MASTRA_DEFAULT_MODEL": "local/echo"}  # offline: the demo agents answer "echo: <message>"
    missing = sorted(set(values) - set(example))
    assert missing == [], f"deploy/mastra.env.example no longer sets {missing}: update the walkthrough"
    lines = []
    for line in ENV_EXAMPLE.read_text().splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={values[key]}" if key in values and not line.startswith("#") else line.replace(HOME, str(home)))
    # beat sends nothing into the broker's queue (not prefixed, shared with other tests) while the test runs
    lines.append("MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S=3600")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o640)
    return env_file(path)


# -- the processes ---------------------------------------------------------------------------------
class Processes:
    """The units' processes, each in its own process group, logging into ``logs``."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: list[tuple[str, subprocess.Popen, Path]] = []

    def start(self, unit) -> None:
        log = self.logs / f"{unit.name}.log"
        with open(log, "wb") as handle:
            proc = subprocess.Popen(unit.argv, cwd=unit.cwd, env=unit.env, stdout=handle, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.running.append((unit.name, proc, log))

    def tails(self) -> str:
        return "\n".join(f"--- {name} ({proc.poll()})\n{log.read_text()[-3000:]}" for name, proc, log in self.running)

    def wait_listening(self, ports: list[int]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        for port in ports:
            while True:
                exited = [name for name, proc, _ in self.running if proc.poll() is not None]
                assert exited == [], f"{exited} exited:\n{self.tails()}"
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert time.monotonic() < deadline, f"port {port} is not listening:\n{self.tails()}"
                    time.sleep(0.2)

    def stop(self) -> None:
        """beat first (nothing more is sent), then the web processes, the worker last (SIGTERM: each
        one's clean stop), SIGKILL for any still there after 20 s."""
        order = sorted(self.running, key=lambda item: ("beat" not in item[0], "worker" in item[0]))
        for _, proc, _ in order:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for _, proc, _ in order:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


# -- talking to the site as nginx forwards it ------------------------------------------------------
def forwarded(port: int, method: str, path: str, *, host: str, https: bool = True, headers: dict | None = None,
         body: bytes | None = None) -> tuple[int, dict, bytes]:
    """One request to a web process as nginx would pass it: ``Host``, ``X-Forwarded-Proto``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        sent = {"Host": host, **({"X-Forwarded-Proto": "https"} if https else {}), **(headers or {})}
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        answer = response.read()
        found = {}
        for name, value in response.getheaders():
            found.setdefault(name.lower(), []).append(value)
        return response.status, found, answer
    finally:
        connection.close()


def cookies_of(headers: dict) -> dict[str, str]:
    jar = SimpleCookie()
    for value in headers.get("set-cookie", []):
        jar.load(value)
    return {name: morsel.value for name, morsel in jar.items()}


def sign_in(port: int, host: str, username: str, password: str) -> str:
    """The session id of ``username`` signed in through the login form (CSRF and all)."""
    status, headers, page = forwarded(port, "GET", "/login/", host=host)
    assert status == 200
    csrf = cookies_of(headers)["csrftoken"]
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    form = urlencode({"csrfmiddlewaretoken": token, "username": username, "password": password}).encode()
    status, headers, _ = forwarded(port, "POST", "/login/", host=host, body=form, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Origin": f"https://{host}", "Cookie": f"csrftoken={csrf}"})
    assert (status, headers.get("location")) == (302, ["/"])
    return cookies_of(headers)["sessionid"]


@contextmanager
def chat_socket(port: int, host: str, session: str, thread_id: str):
    """The chat websocket of ``ops-assistant``'s ``thread_id`` on one web process, after its snapshot."""
    from websockets.sync.client import connect

    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    with connect(f"ws://{host}/ws/agents/ops-assistant/threads/{thread_id}/", sock=sock, origin=f"https://{host}",
                 additional_headers={"Cookie": f"sessionid={session}", "X-Forwarded-Proto": "https"},
                 open_timeout=20, ping_interval=None, proxy=None) as ws:
        snapshot = json.loads(ws.recv(timeout=20))
        assert (snapshot["type"], snapshot["messages"], snapshot["activeRunId"]) == ("snapshot", [], None)
        yield ws


def answer_of(ws) -> tuple[str, list[int]]:
    """The text of the next run on the socket and the seqs of its chunks, up to its ``finish``."""
    text, seqs = [], []
    while True:
        frame = json.loads(ws.recv(timeout=30))
        assert frame["type"] != "error", frame
        if "seq" in frame:
            seqs.append(frame["seq"])
        if frame["type"] == "text-delta":
            text.append(frame["payload"]["text"])
        if frame["type"] == "finish":
            return "".join(text), seqs


# -- the doc's marks -------------------------------------------------------------------------------
def test_the_doc_marks_the_places_the_steps_and_the_systemd_step():
    found = blocks()
    assert [block.kind for block in found] == ["variables", "run", "run", "processes", "run"]
    assert doc_variables(found[0]) == {"MASTRA_HOME": "/srv/mastra", "MASTRA_ENV_FILE": "/etc/mastra/mastra.env",
                                       "MASTRA_HOST": "mastra.example.com", "MASTRA_WEB_PORTS": "8001 8002"}
    before, after = segments(found)
    assert "manage.py migrate --noinput" in before and "manage.py createsuperuser --noinput" in before
    assert "/readyz" in after and "manage.py check --deploy" in after


DOC = """<!-- walkthrough: variables -->
```sh
export MASTRA_HOME=/srv/mastra
export MASTRA_ENV_FILE=/etc/mastra/mastra.env
export MASTRA_HOST=mastra.example.com
export MASTRA_WEB_PORTS="8001 8002"
```

<!-- walkthrough -->
```sh
echo before
```

<!-- walkthrough: processes -->
```sh
for port in $MASTRA_WEB_PORTS; do sudo systemctl enable --now "mastra-web@$port"; done
sudo systemctl enable --now mastra-worker mastra-beat
```

<!-- walkthrough -->
```sh
echo after
```
"""


def test_a_doc_the_walkthrough_can_run_is_split_at_the_systemd_step():
    found = blocks(DOC)
    assert doc_variables(found[0])["MASTRA_WEB_PORTS"] == "8001 8002"
    assert [line for line in "\n".join(segments(found)).splitlines() if line and not line.startswith("#")] == [
        "echo before", "echo after"]


@pytest.mark.parametrize("change, message", [
    (("<!-- walkthrough -->\n```sh\necho before", "<!-- walkthrough -->\n\n```sh\necho before"),
     "not followed by a ```sh block"),
    (("<!-- walkthrough -->\n```sh\necho before", "<!-- walkthrough: later -->\n```sh\necho before"),
     "unknown walkthrough kind 'later'"),
    (("echo before", "sudo -u mastra echo before"), "uses sudo"),
    (("export MASTRA_HOST=mastra.example.com", "export MASTRA_HOST=mastra.example.com\nexport MASTRA_DB=mastra"),
     "teach tests/system/walkthrough.py"),
    (("export MASTRA_HOST=mastra.example.com", "MASTRA_HOST=mastra.example.com"), "not one `export NAME=value`"),
    (("sudo systemctl enable --now mastra-worker mastra-beat", "sudo systemctl enable --now mastra-worker"),
     "does not start mastra-beat.service"),
    (("<!-- walkthrough: processes -->", "<!-- processes -->"), "one processes block"),
])
def test_a_marked_block_the_walkthrough_cannot_run_fails_saying_why(change, message):
    old, new = change
    assert old in DOC
    with pytest.raises(WalkthroughDrift, match=re.escape(message)):
        found = blocks(DOC.replace(old, new, 1))
        doc_variables(found[0])
        segments(found)


def test_the_places_are_the_ones_the_walkthrough_substitutes():
    assert VARIABLES == ("MASTRA_HOME", "MASTRA_ENV_FILE", "MASTRA_HOST", "MASTRA_WEB_PORTS")


# -- the walkthrough -------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_the_deployment_walkthrough_builds_a_site_that_answers(fresh_database, redis_url, redis_prefix, tmp_path):
    missing = [program for program in ("bash", "curl") if shutil.which(program) is None]
    assert missing == [], f"the doc's steps need {missing} (its Packages step installs them)"
    found = blocks()
    doc = doc_variables(found[0])
    before, after = segments(found)
    host = env_file(ENV_EXAMPLE)["ALLOWED_HOSTS"].split(",")[0]
    assert doc["MASTRA_HOST"] == host  # the doc and the env example name the same site
    assert doc["MASTRA_WEB_PORTS"].split() == re.findall(r"server 127\.0\.0\.1:(\d+);", NGINX.read_text())

    home = tmp_path / "srv"
    home.mkdir()
    (home / "app").symlink_to(ROOT)
    (home / "venv").symlink_to(virtualenv())
    env_path = tmp_path / "mastra.env"
    write_env_file(env_path, home=home, database_url=fresh_database, redis_url=redis_url, prefix=redis_prefix)
    ports = [free_port(), free_port()]
    places = {"MASTRA_HOME": str(home), "MASTRA_ENV_FILE": str(env_path), "MASTRA_HOST": host,
              "MASTRA_WEB_PORTS": " ".join(map(str, ports))}
    # the virtualenv may have this project installed from another checkout: the processes import
    # this one (an installed release needs nothing of the kind)
    shell = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
             "PYTHONPATH": str(ROOT), **places}

    run_script(before, {**shell, **ADMIN}, cwd=tmp_path)
    assert (home / "static" / "staticfiles.json").exists()

    state = tmp_path / "state"
    state.mkdir()
    processes = Processes(tmp_path)
    try:
        for unit in unit_processes(home=home, env_path=env_path, state=state, ports=places["MASTRA_WEB_PORTS"].split(),
                                   base_env={k: shell[k] for k in ("PATH", "LANG", "PYTHONPATH")} | {"HOME": str(home)}):
            processes.start(unit)
        assert sorted(name for name, _, _ in processes.running) == sorted(
            [f"mastra-web@{port}.service" for port in ports] + ["mastra-worker.service", "mastra-beat.service"])
        processes.wait_listening(ports)

        output = run_script(after, shell, cwd=tmp_path)
        ready = {"status": "ok", "checks": {"database": "ok", "migrations": "ok", "redis": "ok"}}
        assert [json.loads(line) for line in output.splitlines() if line.startswith("{")] == [ready, ready]
        assert "security.W005" in output and "security.W021" in output  # HSTS options left to the operator

        for port in ports:
            status, _, body = forwarded(port, "GET", "/readyz", host=host, https=False)  # a probe over plain HTTP
            assert (status, json.loads(body)) == (200, ready)

        # plain HTTP is sent to HTTPS; over "HTTPS" the login page, with HSTS
        status, headers, _ = forwarded(ports[0], "GET", "/login/", host=host, https=False)
        assert (status, headers["location"]) == (301, [f"https://{host}/login/"])
        status, headers, page = forwarded(ports[0], "GET", "/login/", host=host)
        assert (status, headers["strict-transport-security"]) == (200, ["max-age=31536000"])

        # its static files: collected, hashed names, served
        statics = re.findall(r'(?:href|src)="(/static/[^"]+)"', page.decode())
        assert statics and [path for path in statics if not HASHED.search(path)] == []
        for path in statics:
            status, headers, body = forwarded(ports[1], "GET", path, host=host)
            assert (status, headers["cache-control"]) == (200, ["max-age=315360000, public, immutable"]), path
            assert body == (home / "static" / path.removeprefix("/static/")).read_bytes()

        # the operator the doc created signs in; a message over the websocket of one process is
        # answered, and the other process's subscriber hears the same chunks through Redis
        session = sign_in(ports[0], host, ADMIN["DJANGO_SUPERUSER_USERNAME"], ADMIN["DJANGO_SUPERUSER_PASSWORD"])
        with chat_socket(ports[0], host, session, "walkthrough") as sender, \
                chat_socket(ports[1], host, session, "walkthrough") as listener:
            sender.send(json.dumps({"type": "send-message", "message": "hello from the walkthrough"}))
            text, seqs = answer_of(sender)
            assert text == "echo: hello from the walkthrough"
            assert answer_of(listener) == (text, seqs)

        exited = [name for name, proc, _ in processes.running if proc.poll() is not None]
        assert exited == [], processes.tails()
    finally:
        processes.stop()
