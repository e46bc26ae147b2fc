"""The production layout of ``deploy/Procfile`` as real processes, and the clients that drive it.

:class:`Layout` creates a fresh PostgreSQL database on the server of the test database, migrates it,
starts a private ``redis-server`` and the Procfile's processes (two ``web``, one ``worker``, one
``beat``) with ``sys.executable -m daphne`` / ``-m celery``, and stops everything at the end (SIGTERM,
then SIGKILL), dropping the database. The clients are plain asyncio: :func:`http` (one request, one
connection, a client timeout always), :class:`SseSubscriber` (``threads/subscribe``) and
:class:`WsSubscriber` (the chat websocket), both resumable with the last ``seq`` they read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROCFILE = ROOT / "deploy" / "Procfile"
AGENT = "ops"
USER = "system-ops"
#: the suite's lease TTL: a dead owner's threads are taken over within about two seconds
LEASE_TTL_MS = 1500
START_TIMEOUT_S = 60.0
#: every request of the suite has a client timeout: a hang fails the test by name
REQUEST_TIMEOUT_S = 15.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


async def await_until(predicate, timeout: float, what: str, interval: float = 0.05):
    """Poll a sync ``predicate`` (a database read, a file read) from async code."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


# -- the Procfile -----------------------------------------------------------------------------------
VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def procfile_commands(env: dict[str, str], path: Path = PROCFILE) -> dict[str, list[str]]:
    """``{process type: argv}`` of the Procfile, ``${VAR:-default}`` substituted from ``env``, each
    program run as ``sys.executable -m <program>`` (this interpreter's environment)."""
    commands = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, command = line.partition(":")
        command = VARIABLE.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), command)
        program, *args = shlex.split(command)
        commands[name.strip()] = [sys.executable, "-m", program, *args]
    return commands


# -- services ---------------------------------------------------------------------------------------
class PrivateRedis:
    """A ``redis-server`` of the suite's own, without persistence, restartable on its port."""

    def __init__(self, binary: str, workdir: Path):
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def listening() -> bool:
            assert self.proc.poll() is None, f"redis-server exited ({self.proc.returncode})"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
            return False

        wait_for(listening, 10, f"redis-server on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class SuiteDatabase:
    """A database of the suite's own on the PostgreSQL server of ``settings`` (a Django database
    settings dict), created empty and dropped at the end."""

    def __init__(self, settings: dict):
        self.host = settings.get("HOST") or "127.0.0.1"
        self.port = int(settings.get("PORT") or 5432)
        self.user = settings.get("USER") or "postgres"
        self.password = settings.get("PASSWORD") or ""
        self.name = f"mastra_system_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        password = f":{self.password}" if self.password else ""
        self.url = f"postgres://{self.user}{password}@{self.host}:{self.port}/{self.name}"
        self._conn = None

    def admin(self, dbname: str = "postgres"):
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password or None,
                               dbname=dbname, autocommit=True, connect_timeout=5)

    def create(self) -> None:
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')

    def drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        with self.admin() as conn:
            conn.execute(f'ALTER DATABASE "{self.name}" WITH ALLOW_CONNECTIONS true')
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        """Rows of one statement on the suite's database (a connection of the test's own,
        reopened when a fault scenario terminated it)."""
        import psycopg

        for attempt in range(2):
            if self._conn is None or self._conn.closed:
                self._conn = self.admin(self.name)
            try:
                return self._conn.execute(sql, params).fetchall()
            except psycopg.OperationalError:
                self._conn.close()
                self._conn = None
                if attempt:
                    raise
        return []

    # the outage of scenario 5: no new connection is allowed, every existing one is terminated
    def disallow_connections(self) -> None:
        with self.admin() as conn:
            conn.execute(f'ALTER DATABASE "{self.name}" WITH ALLOW_CONNECTIONS false')

    def allow_connections(self) -> None:
        with self.admin() as conn:
            conn.execute(f'ALTER DATABASE "{self.name}" WITH ALLOW_CONNECTIONS true')

    def terminate_backends(self) -> int:
        with self.admin() as conn:
            rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = %s AND pid <> pg_backend_pid()", (self.name,)).fetchall()
        return len(rows)


# -- processes --------------------------------------------------------------------------------------
@dataclass
class Process:
    """One process of the layout; its output (stdout and stderr) is appended to ``log``."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    port: int | None = None
    proc: subprocess.Popen | None = None
    scanned: int = 0  # how much of the log the last scan read

    def start(self) -> None:
        with open(self.log, "ab") as out:
            out.write(f"=== start {' '.join(self.argv[1:])}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.argv, cwd=str(ROOT), env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL to the process and its children (its process group: a Celery worker's pool)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def new_output(self) -> str:
        """The log written since the last call."""
        with open(self.log, "rb") as handle:
            handle.seek(self.scanned)
            data = handle.read()
        self.scanned += len(data)
        return data.decode(errors="replace")


#: daphne's access log line of a request answered with a 500
ACCESS_500 = re.compile(r'^\S+ - - \[[^\]]*\] "[^"]*" 500 ')
#: a logged error that means a request was answered with a 500 (Django's, the API's, daphne's, the
#: websocket's internal_error)
FIVE_HUNDRED = re.compile(r"Internal Server Error|unexpected error in an API view|Exception inside application|"
                          r"internal_error|unexpected error")


def server_errors(output: str) -> list[str]:
    """The lines of a web process's output (``LOG_FORMAT=json``) that show a request answered with a
    500: a record of one of :data:`FIVE_HUNDRED`'s messages, or a traceback printed outside the
    logging (an exception nobody handled)."""
    found = []
    for line in output.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            if "Traceback" in line or ACCESS_500.search(line):
                found.append(line)
            continue
        if not isinstance(record, dict):
            continue
        if FIVE_HUNDRED.search(str(record.get("message", ""))) or record.get("status_code") == 500:
            found.append(f"{record.get('level')} {record.get('logger')}: {record.get('message')}\n"
                         f"{record.get('exception', '')}")
    return found


#: a Celery task that failed, or a process that gave up (a lost broker connection is logged with
#: its traceback and retried: that is Celery's own recovery, not an error)
CELERY_FAILURE = re.compile(r"Task \S+ raised|CRITICAL/|Unrecoverable error")


def celery_errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if CELERY_FAILURE.search(line)]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@dataclass
class Layout:
    """The Procfile's processes on the suite's database and Redis (see the module docstring)."""

    workdir: Path
    database: SuiteDatabase
    redis: PrivateRedis
    web: list[Process] = field(default_factory=list)
    others: list[Process] = field(default_factory=list)
    token: str = ""
    session: str = ""

    @property
    def model_log(self) -> Path:
        return self.workdir / "model-calls.jsonl"

    @property
    def processes(self) -> list[Process]:
        return [*self.web, *self.others]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("DATABASE_URL", "REDIS_URL", "MASTRA", "CELERY_BROKER_URL", "PYTEST_CURRENT_TEST",
                            "DJANGO_ALLOW_ASYNC_UNSAFE", "MASTRA_TEST_POSTGRES_URL")}
        env.update({
            "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DATABASE_URL": self.database.url,
            "REDIS_URL": self.redis.url, "MASTRA": "tests.system.agents:mastra",
            "MASTRA_THREAD_LEASE_TTL_MS": str(LEASE_TTL_MS), "WEB_CONCURRENCY": "2",
            "SECRET_KEY": "system-suite-" + self.database.name, "LOG_FORMAT": "json", "LOG_LEVEL": "WARNING",
            # the soak sends 2,000 inputs in a minute as one user
            "MASTRA_API_SEND_RATE": "100000/minute",
            "CELERY_CONCURRENCY": "1", "CELERY_BEAT_SCHEDULE_FILE": str(self.workdir / "celerybeat-schedule"),
            "SYSTEM_TEST_MODEL_LOG": str(self.model_log), "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        })
        return env

    # -- start and stop -----------------------------------------------------------------------------
    def prepare(self) -> None:
        """Migrate the suite's database; create the user, their token and a signed-in session."""
        env = self.env()
        done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"migrate failed:\n{done.stdout}\n{done.stderr}"
        script = ("import django, json; django.setup()\n"
                  "from django.contrib.auth import get_user_model\n"
                  "from django.test import Client\n"
                  "from rest_framework.authtoken.models import Token\n"
                  f"user = get_user_model().objects.create_user({USER!r}, password=None)\n"
                  "client = Client(); client.force_login(user)\n"
                  "print(json.dumps({'token': Token.objects.create(user=user).key,"
                  " 'session': client.cookies['sessionid'].value}))\n")
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"the user could not be created:\n{done.stderr}"
        credentials = json.loads(done.stdout.strip().splitlines()[-1])
        self.token, self.session = credentials["token"], credentials["session"]

    def start(self) -> None:
        env = self.env()
        for i in range(2):
            port = free_port()
            argv = procfile_commands({**env, "PORT": str(port), "BIND": "127.0.0.1"})["web"]
            self.web.append(Process(f"web{i + 1}", argv, env, self.workdir / f"web{i + 1}.log", port=port))
        commands = procfile_commands(env)
        for name in ("worker", "beat"):
            self.others.append(Process(name, commands[name], env, self.workdir / f"{name}.log"))
        for process in self.processes:
            process.start()
        for process in self.web:
            self.wait_ready(process)
        worker = self.others[0]
        wait_for(lambda: self.assert_alive(worker) and "ready." in worker.tail(100_000), START_TIMEOUT_S,
                 f"the Celery worker to be ready:\n{worker.tail()}", interval=0.2)

    def assert_alive(self, process: Process) -> bool:
        assert process.alive(), f"{process.name} exited ({process.proc.returncode}):\n{process.tail()}"
        return True

    def wait_ready(self, process: Process, timeout: float = START_TIMEOUT_S) -> None:
        """Until ``/readyz`` answers 200 on ``process``."""
        import urllib.error
        import urllib.request

        def ready() -> bool:
            self.assert_alive(process)
            try:
                with urllib.request.urlopen(process.url + "/readyz", timeout=3) as response:
                    return response.status == 200
            except (urllib.error.URLError, OSError):
                return False

        wait_for(ready, timeout, f"{process.name} /readyz 200:\n{process.tail()}", interval=0.1)

    def restart(self, process: Process) -> None:
        """Start ``process`` again on its port (after a kill) and wait until it is ready."""
        assert not process.alive()
        process.start()
        self.wait_ready(process)

    def stop(self) -> None:
        """SIGTERM to every process, SIGKILL to the process groups of those still running 10 s later."""
        for process in self.processes:
            if process.alive():
                process.proc.terminate()
        deadline = time.monotonic() + 10
        for process in self.processes:
            if process.proc is None:
                continue
            try:
                process.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill9()
            with contextlib.suppress(ProcessLookupError):  # a child left behind by its parent
                os.killpg(process.proc.pid, signal.SIGKILL)

    # -- what the processes did ---------------------------------------------------------------------
    def calls(self) -> list[dict]:
        from tests.agents.thread_process_agents import read_calls

        return read_calls(self.model_log)

    def new_errors(self) -> dict[str, list[str]]:
        """Per web process, the 500s logged since the last call (:func:`server_errors`); the Celery
        processes' tracebacks."""
        errors = {}
        for process in self.web:
            found = server_errors(process.new_output())
            if found:
                errors[process.name] = found
        for process in self.others:
            found = celery_errors(process.new_output())
            if not process.alive():
                found.append(f"exited ({process.proc.returncode})")
            if found:
                errors[process.name] = found
        return errors

    def runs_by_status(self, thread_ids: list[str]) -> dict[str, int]:
        rows = self.database.query(
            "SELECT r.status, count(*) FROM agents_run r JOIN agents_thread t ON t.key = r.thread_id "
            "WHERE t.resource_id = %s AND t.thread_id = ANY(%s) GROUP BY r.status", (USER, thread_ids))
        return dict(sorted(rows))

    def run_errors(self, thread_ids: list[str]) -> dict[str, int]:
        """The errors of these threads' runs that did not complete, with how many runs had each."""
        rows = self.database.query(
            "SELECT r.error, count(*) FROM agents_run r JOIN agents_thread t ON t.key = r.thread_id "
            "WHERE t.resource_id = %s AND t.thread_id = ANY(%s) AND r.status <> 'completed' GROUP BY r.error",
            (USER, thread_ids))
        return dict(rows)

    def runs(self, thread_id: str) -> list[tuple[str, str]]:
        """``(run id, status)`` of a thread's runs, oldest first."""
        return self.database.query(
            "SELECT r.id, r.status FROM agents_run r JOIN agents_thread t ON t.key = r.thread_id "
            "WHERE t.resource_id = %s AND t.thread_id = %s ORDER BY r.started_at, r.id", (USER, thread_id))

    def inputs_by_status(self, thread_ids: list[str]) -> dict[str, int]:
        rows = self.database.query(
            "SELECT i.status, count(*) FROM agents_threadinput i JOIN agents_thread t ON t.key = i.thread_id "
            "WHERE t.resource_id = %s AND t.thread_id = ANY(%s) GROUP BY i.status", (USER, thread_ids))
        return dict(sorted(rows))

    def answered(self, thread_ids: list[str]) -> int:
        """Inputs of these threads taken by a run that completed."""
        rows = self.database.query(
            "SELECT count(*) FROM agents_threadinput i JOIN agents_thread t ON t.key = i.thread_id "
            "JOIN agents_run r ON r.id = i.consumed_by WHERE t.resource_id = %s AND t.thread_id = ANY(%s) "
            "AND i.status = 'consumed' AND r.status = 'completed'", (USER, thread_ids))
        return rows[0][0]

    def event_seqs(self, thread_id: str) -> list[int]:
        rows = self.database.query(
            "SELECT e.seq FROM agents_threadevent e JOIN agents_thread t ON t.key = e.thread_id "
            "WHERE t.resource_id = %s AND t.thread_id = %s ORDER BY e.seq", (USER, thread_id))
        return [seq for (seq,) in rows]

    def stored_user_texts(self, thread_id: str) -> list[str]:
        """The texts of the thread's stored user inputs, in order (Mastra's format: a message sent
        into a thread is a ``signal`` message of type ``user``, its text in ``content.parts``)."""
        rows = self.database.query(
            "SELECT m.content FROM agents_message m JOIN agents_thread t ON t.key = m.thread_id "
            "WHERE t.resource_id = %s AND t.thread_id = %s AND (m.role = 'user' OR (m.role = 'signal' "
            "AND m.type = 'user')) ORDER BY m.id", (USER, thread_id))
        from agents.runtime.stored_messages import stored_text

        return [stored_text({"role": "signal", "content": content}) for (content,) in rows]

    def settled(self, thread_ids: list[str]) -> bool:
        """No run of these threads is running and no input of theirs waits."""
        runs = self.runs_by_status(thread_ids)
        inputs = self.inputs_by_status(thread_ids)
        return not runs.get("running") and not inputs.get("pending")

    # -- clients ------------------------------------------------------------------------------------
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}"}

    async def send(self, process: Process, thread_id: str, text: str, *, route: str = "send-message",
                   timeout: float = REQUEST_TIMEOUT_S) -> tuple[int, dict]:
        status, _, body = await http("POST", process.port, f"/api/agents/{AGENT}/{route}",
                                     {"message": f"{thread_id}|{text}", "threadId": thread_id},
                                     headers=self.auth(), timeout=timeout)
        return status, json.loads(body) if body else {}

    def sse(self, process: Process, thread_id: str, last_seq: int | None = None) -> "SseSubscriber":
        return SseSubscriber(process.port, thread_id, self.auth(), last_seq)

    def ws(self, process: Process, thread_id: str, last_seq: int | None = None) -> "WsSubscriber":
        return WsSubscriber(process.port, thread_id, self.session, last_seq)


# -- HTTP -------------------------------------------------------------------------------------------
async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection before answering")
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers


def _request_bytes(method: str, port: int, path: str, body: dict | None, headers: dict | None) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n{extra}\r\n")
    return head.encode() + data


async def http(method: str, port: int, path: str, body: dict | None = None, *, headers: dict | None = None,
               timeout: float = REQUEST_TIMEOUT_S) -> tuple[int, dict[str, str], bytes]:
    """One request on a connection of its own: ``(status, headers, body)``; ``asyncio.TimeoutError``
    after ``timeout`` seconds whatever the server does."""

    async def go():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(_request_bytes(method, port, path, body, headers))
            status, head = await _read_head(reader)
            if head.get("transfer-encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int((await reader.readline()).split(b";")[0], 16)
                    if size == 0:
                        break
                    data += await reader.readexactly(size)
                    await reader.readexactly(2)
            elif "content-length" in head:
                data = await reader.readexactly(int(head["content-length"]))
            else:
                data = await reader.read()
            return status, head, data
        finally:
            writer.close()

    return await asyncio.wait_for(go(), timeout)


# -- subscribers ------------------------------------------------------------------------------------
class Subscriber:
    """Reads a thread's chunks in a task of its own into :attr:`chunks`; ``close()`` ends it, and a
    new subscriber resumes with :attr:`last_seq`."""

    def __init__(self, port: int, thread_id: str, last_seq: int | None):
        self.port = port
        self.thread_id = thread_id
        self.resume_from = last_seq
        self.chunks: list[dict] = []
        self.connected = asyncio.Event()
        self.task: asyncio.Task | None = None

    @property
    def last_seq(self) -> int | None:
        seqs = [c["seq"] for c in self.chunks if "seq" in c]
        return seqs[-1] if seqs else self.resume_from

    async def open(self, timeout: float = REQUEST_TIMEOUT_S) -> "Subscriber":
        self.task = asyncio.ensure_future(self.read())
        done, _ = await asyncio.wait({self.task, asyncio.ensure_future(self.connected.wait())}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        if self.task in done:
            self.task.result()  # raises what failed
        assert self.connected.is_set(), f"{type(self).__name__} on port {self.port}: not connected in {timeout}s"
        return self

    async def read(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    async def until(self, stop, timeout: float, what: str) -> dict:
        """Until a chunk for which ``stop(chunk)``; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            for chunk in self.chunks:
                if stop(chunk):
                    return chunk
            if self.task is not None and self.task.done():
                self.task.result()
                raise AssertionError(f"{type(self).__name__} ended before {what}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{type(self).__name__} on port {self.port}: no {what} in {timeout}s; "
                                     f"seqs {[c.get('seq') for c in self.chunks][-20:]}")
            await asyncio.sleep(0.02)


class SseSubscriber(Subscriber):
    def __init__(self, port: int, thread_id: str, auth: dict, last_seq: int | None = None):
        super().__init__(port, thread_id, last_seq)
        self.auth = auth

    async def read(self) -> None:
        body = {"threadId": self.thread_id, **({"lastSeq": self.resume_from} if self.resume_from is not None else {})}
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, limit=2 ** 22)
        try:
            writer.write(_request_bytes("POST", self.port, f"/api/agents/{AGENT}/threads/subscribe", body, self.auth))
            status, head = await _read_head(reader)
            assert status == 200, f"subscribe answered {status}"
            chunked = head.get("transfer-encoding", "").lower() == "chunked"
            buffer = b""
            while True:
                if chunked:
                    size = int((await reader.readline()).split(b";")[0], 16)
                    if size == 0:
                        return
                    buffer += await reader.readexactly(size)
                    await reader.readexactly(2)
                else:
                    piece = await reader.read(65536)
                    if not piece:
                        return
                    buffer += piece
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    if event.startswith(b": connected"):
                        self.connected.set()
                    elif event.startswith(b"data: "):
                        self.chunks.append(json.loads(event[6:]))
        finally:
            writer.close()


class WsSubscriber(Subscriber):
    def __init__(self, port: int, thread_id: str, session: str, last_seq: int | None = None):
        super().__init__(port, thread_id, last_seq)
        self.session = session
        self.snapshot: dict | None = None

    async def read(self) -> None:
        import websockets

        query = f"?lastSeq={self.resume_from}" if self.resume_from is not None else ""
        url = f"ws://127.0.0.1:{self.port}/ws/agents/{AGENT}/threads/{self.thread_id}/{query}"
        async with websockets.connect(url, origin=f"http://127.0.0.1:{self.port}",
                                      additional_headers={"Cookie": f"sessionid={self.session}"},
                                      open_timeout=REQUEST_TIMEOUT_S, max_size=None, ping_interval=None) as ws:
            async for raw in ws:
                frame = json.loads(raw)
                if frame.get("type") == "snapshot":
                    self.snapshot = frame
                    if self.resume_from is None:
                        self.resume_from = frame["lastSeq"]
                    self.connected.set()
                else:
                    self.chunks.append(frame)


def is_final(chunk: dict) -> bool:
    """A run's last chunk on the thread: ``abort``, or a ``finish`` that is not a pause."""
    return chunk.get("type") == "abort" or (
        chunk.get("type") == "finish"
        and chunk.get("payload", {}).get("stepResult", {}).get("reason") not in ("tool-calls", "suspended"))


def seqs(chunks: list[dict]) -> list[int]:
    return [c["seq"] for c in chunks if "seq" in c]


# -- the scenarios' counts --------------------------------------------------------------------------
#: one dict per scenario that reported, printed again at the end of the run (conftest's
#: ``pytest_terminal_summary``) so that CI output shows them without ``-s``
REPORTS: list[dict] = []


def report(scenario: str, **counts) -> dict:
    line = {"scenario": scenario, **counts}
    REPORTS.append(line)
    print(json.dumps(line))
    return line
