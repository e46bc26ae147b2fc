"""The HTTP API under load, beside Mastra's own server, in one run.

    .venv/bin/python bench/http_api.py [--seconds 10] [--clients 50] [--threads 50] [--subscribers 10]
        [--rounds 4] [--rate 20] [--servers django,mastra] [--cases generate,sse,send]
        [--mastra-dir /tmp/mref-x]   (a copy of ../shared/reference/mastra with ``npm ci`` done)

Servers (one process each, started and stopped here, measured one after the other):
  django  this project: one daphne process, the ``echo`` agent of ``bench/http_site.py`` (``local/echo``,
          memory), a temporary SQLite file (or ``DATABASE_URL``), ``DEBUG=false``, token auth, the
          send rate lifted to 100000000/s (DRF's throttle keeps a timestamp per request of its
          window, copied in and out of the cache on each send: a minute's window of a lifted rate
          holds every request of the last minute, which no real rate comes near).
  mastra  ``real-server.mjs`` (Mastra's ``createNodeServer``, LibSQL) with ``ECHO_CHUNK_DELAY_MS=0``,
          its ``echo`` agent, run with the directory's own ``node`` (``node_modules/node/bin/node``,
          the version its package.json pins; the ``node`` on PATH when it has none).

Cases (keep-alive HTTP/1.1 connections, one per client, from this process):
  generate  ``--clients`` clients each POST ``/api/agents/echo/generate {"messages": "hello"}`` in a
            loop for ``--seconds``: requests/s, p50 / p99 latency.
  send      ``--clients`` clients each POST ``send-message`` to a new thread every time (each wakes
            an idle thread) for ``--seconds``: requests/s, p50 / p99 (the run goes on after the answer).
  sse       ``--threads`` threads × ``--subscribers`` subscribers (SSE connections), then
            ``--rounds`` rounds of one ``send-message`` to every thread, ``--rate`` per second. Latency
            of a chunk: from the moment its thread's message was sent to the moment a subscriber
            reads it; p50 / p99 over every chunk × subscriber, and the same for each run's ``finish``.
  github    (this server only; not in the default cases) ``--clients`` clients posting signed GitHub
            ``workflow_run`` failures, each a new delivery id, to a low-priority endpoint (stored,
            coalesced per repository, no run woken) for ``--seconds``: deliveries/s, p50 / p99.

A first line is on the machine and interpreter (``bench/machine.py``). Each case prints one JSON
line (server, case, n, per_s, p50_ms, p99_ms, rss_mb of the server after the case, max_rss_mb; for
generate and send also cpu_ms, the server's CPU time per answered request, and steal_pct, the
machine's CPU steal meanwhile). With both servers, one ``ratio`` line per case: django / mastra
requests/s (and p99 latencies). Timings are wall clock on a shared machine: the load generator runs
here too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MASTRA_DIR = ROOT.parent / "shared" / "reference" / "mastra"


# -- a small keep-alive HTTP/1.1 client (the load generator must cost less than the servers) -------
class Connection:
    def __init__(self, port: int, headers: dict[str, str]):
        self.port = port
        self.extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=2 ** 22)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def send(self, method: str, path: str, body: dict | None) -> dict[str, str]:
        """Send a request and read the status line and headers; returns the headers (lower case),
        with ``:status``."""
        if self.writer is None:
            await self.open()
        data = json.dumps(body).encode() if body is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n{self.extra}\r\n")
        self.writer.write(head.encode() + data)
        status = await self.reader.readline()
        if not status:
            raise ConnectionError("connection closed")
        headers = {":status": status.split()[1].decode()}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        return headers

    async def chunks(self, headers: dict[str, str]):
        """The body's pieces (chunked or by Content-Length)."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    return
                piece = await self.reader.readexactly(size)
                await self.reader.readexactly(2)
                yield piece
        else:
            length = int(headers.get("content-length", "0"))
            if length:
                yield await self.reader.readexactly(length)

    async def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        try:
            headers = await self.send(method, path, body)
        except (ConnectionError, asyncio.IncompleteReadError):  # a server closed an idle keep-alive
            self.close()
            headers = await self.send(method, path, body)
        data = b"".join([piece async for piece in self.chunks(headers)])
        if headers.get("connection", "").lower() == "close":
            self.close()
        return int(headers[":status"]), data


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# -- servers ------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not listen in time")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_ticks() -> tuple[int, int]:
    """(steal, total) CPU ticks of the machine so far (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return values[7], sum(values)


def rss_mb(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of a process in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) / 1024
    return round(values.get("VmRSS", 0), 1), round(values.get("VmHWM", 0), 1)


class DjangoServer:
    name = "django"
    resource = "bench"

    def __init__(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="mastra-http-bench-")
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DEBUG": "false",
                    "LOG_LEVEL": "WARNING", "MASTRA": "bench.http_site:mastra", "MASTRA_API_SEND_RATE": "100000000/s",
                    "PYTHONPATH": str(ROOT), "MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S": "3600"}
        self.env.setdefault("DATABASE_URL", f"sqlite:///{self.tmp}/bench.sqlite3")
        self.proc: subprocess.Popen | None = None

    def start(self) -> dict[str, str]:
        python = sys.executable
        subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=self.env, check=True)
        script = ("from django.contrib.auth import get_user_model; from rest_framework.authtoken.models import Token; "
                  "from inbox.models import WebhookEndpoint; "
                  "u, _ = get_user_model().objects.get_or_create(username='bench'); "
                  "WebhookEndpoint.objects.get_or_create(name='bench', defaults=dict(source='github', "
                  f"secret={WEBHOOK_SECRET!r}, agent_id='echo', resource_id='bench', "
                  "thread_template='github:{repository}', priority_rules={'ci-status': 'low'})); "
                  "print(Token.objects.get_or_create(user=u)[0].key)")
        token = subprocess.run([python, "manage.py", "shell", "-c", script], cwd=ROOT, env=self.env, check=True,
                               capture_output=True, text=True).stdout.strip().splitlines()[-1]
        self.port = free_port()
        self.proc = subprocess.Popen([python, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                                      "mastra_site.asgi:application"], cwd=ROOT, env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=open(Path(self.tmp) / "daphne.err", "wb"))
        wait_listening(self.port, self.proc)
        return {"Authorization": f"Token {token}"}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {self.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def mastra_node(directory: Path) -> str:
    """The Mastra directory's own node (its package.json pins one), else the node on PATH."""
    own = directory / "node_modules" / "node" / "bin" / "node"
    return str(own) if own.exists() else shutil.which("node") or "node"


class MastraServer:
    """A Mastra server script of ``directory`` (``real-server.mjs`` by default), on a free port."""
    name = "mastra"
    resource = "bench"

    def __init__(self, directory: Path, script: str = "real-server.mjs", env: dict | None = None,
                 stderr: Path | None = None) -> None:
        self.directory = directory
        self.script = script
        self.env = env if env is not None else {"ECHO_CHUNK_DELAY_MS": "0", "LOG_LEVEL": "error"}
        self.stderr = stderr
        self.proc: subprocess.Popen | None = None

    def start(self) -> dict[str, str]:
        if not (self.directory / "node_modules").exists():
            raise SystemExit(f"{self.directory} has no node_modules: copy ../shared/reference/mastra somewhere, "
                             "run npm ci there and pass --mastra-dir")
        self.port = free_port()
        env = {**os.environ, "MASTRA_TELEMETRY_DISABLED": "1", **self.env}
        self.proc = subprocess.Popen([mastra_node(self.directory), self.script, str(self.port)], cwd=self.directory,
                                     env=env, stdout=subprocess.DEVNULL,
                                     stderr=open(self.stderr, "wb") if self.stderr else subprocess.DEVNULL)
        wait_listening(self.port, self.proc)
        return {}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# -- cases --------------------------------------------------------------------------------------
async def closed_loop(server, headers: dict, clients: int, seconds: float, make_request) -> dict:
    """``clients`` connections each sending ``make_request()`` in a loop; latencies after a warm-up."""
    latencies: list[float] = []
    errors = 0
    stop_at = time.monotonic() + 1.0 + seconds
    measure_from = time.monotonic() + 1.0

    async def client() -> None:
        nonlocal errors
        connection = Connection(server.port, headers)
        try:
            while time.monotonic() < stop_at:
                method, path, body = make_request()
                started = time.monotonic()
                status, _ = await connection.request(method, path, body)
                if status != 200:
                    errors += 1
                elif started >= measure_from:
                    latencies.append(time.monotonic() - started)
        finally:
            connection.close()

    async def cpu_at_measure_start() -> tuple[float, tuple[int, int]]:
        await asyncio.sleep(max(0.0, measure_from - time.monotonic()))
        return cpu_s(server.proc.pid), steal_ticks()

    began = time.monotonic()
    start, *_ = await asyncio.gather(cpu_at_measure_start(), *(client() for _ in range(clients)))
    elapsed = time.monotonic() - max(began + 1.0, measure_from)
    cpu, (steal, total) = cpu_s(server.proc.pid) - start[0], steal_ticks()
    return {"n": len(latencies), "errors": errors, "per_s": round(len(latencies) / elapsed, 1),
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1), "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
            # the server's CPU per answered request (a send's run goes on after its answer: steady state)
            # and the machine's CPU steal meanwhile: a noisy host changes per_s far more than cpu_ms
            "cpu_ms": round(cpu * 1000 / max(1, len(latencies)), 2),
            "steal_pct": round(100 * (steal - start[1][0]) / max(1, total - start[1][1]), 1)}


async def case_generate(server, headers, args) -> dict:
    return await closed_loop(server, headers, args.clients, args.seconds,
                             lambda: ("POST", "/api/agents/echo/generate", {"messages": "hello"}))


async def case_send(server, headers, args) -> dict:
    def request():
        return ("POST", "/api/agents/echo/send-message",
                {"message": "hello", "resourceId": server.resource, "threadId": f"bench-{uuid.uuid4().hex}"})

    result = await closed_loop(server, headers, args.clients, args.seconds, request)
    await asyncio.sleep(2)  # let the woken runs end before the next case
    return result


async def case_sse(server, headers, args) -> dict:
    threads = [f"sse-{uuid.uuid4().hex[:12]}" for _ in range(args.threads)]
    sent_at: dict[str, float] = {}
    chunk_latency: list[float] = []
    finish_latency: list[float] = []
    finishes = 0
    finished = asyncio.Event()
    expected = args.threads * args.subscribers

    async def subscriber(thread_id: str, ready: asyncio.Event) -> None:
        nonlocal finishes
        connection = Connection(server.port, headers)
        response = await connection.send("POST", "/api/agents/echo/threads/subscribe",
                                          {"resourceId": server.resource, "threadId": thread_id})
        buffer = b""
        try:
            async for piece in connection.chunks(response):
                if not ready.is_set():
                    ready.set()
                buffer += piece
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    if not block.startswith(b"data: "):
                        continue
                    now = time.monotonic()
                    chunk = json.loads(block[6:])
                    started = sent_at.get(thread_id)
                    if started is None:
                        continue
                    chunk_latency.append(now - started)
                    if chunk.get("type") == "finish":
                        finish_latency.append(now - started)
                        finishes += 1
                        if finishes >= expected * args.rounds:
                            finished.set()
        finally:
            connection.close()

    readies = []
    tasks = []
    for thread_id in threads:
        for _ in range(args.subscribers):
            ready = asyncio.Event()
            readies.append(ready)
            tasks.append(asyncio.create_task(subscriber(thread_id, ready)))
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 60)
    sender = Connection(server.port, headers)
    # one send-message every 1/rate s, thread after thread: a steady load (below what either
    # server can take) so that latencies show delivery to subscribers, not a queue of wakes
    for _ in range(args.rounds):
        for thread_id in threads:
            started = time.monotonic()
            sent_at[thread_id] = started
            status, body = await sender.request("POST", "/api/agents/echo/send-message", {
                "message": "hello", "resourceId": server.resource, "threadId": thread_id})
            if status != 200:
                raise RuntimeError(f"send-message answered {status}: {body[:200]!r}")
            await asyncio.sleep(max(0.0, started + 1 / args.rate - time.monotonic()))
    try:
        await asyncio.wait_for(finished.wait(), 30)
    except asyncio.TimeoutError:
        pass
    sender.close()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"n": len(chunk_latency), "subscribers": len(tasks), "threads": len(threads),
            "finishes": len(finish_latency), "finishes_expected": expected * args.rounds,
            "p50_ms": round(percentile(chunk_latency, 0.5) * 1000, 1),
            "p99_ms": round(percentile(chunk_latency, 0.99) * 1000, 1),
            "finish_p50_ms": round(percentile(finish_latency, 0.5) * 1000, 1),
            "finish_p99_ms": round(percentile(finish_latency, 0.99) * 1000, 1)}


WEBHOOK_SECRET = "bench-secret"


def signed_delivery(n: int) -> tuple[bytes, dict]:
    """A GitHub ``workflow_run`` failure (one of 50 repositories) and its headers."""
    import hashlib
    import hmac

    body = json.dumps({"action": "completed", "repository": {"full_name": f"acme/repo-{n % 50}"},
                       "workflow_run": {"id": n, "name": "Build", "head_branch": "main", "conclusion": "failure",
                                        "head_sha": "acb5820c", "html_url": f"https://github.com/acme/runs/{n}"}}).encode()
    signature = "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return body, {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": uuid.uuid4().hex,
                  "X-Hub-Signature-256": signature}


async def case_github(server, headers, args) -> dict:
    """``--clients`` clients posting signed failed-CI deliveries (each a new delivery id, low priority:
    stored and coalesced per repository, no run woken) for ``--seconds``."""
    if server.name != "django":
        return {"n": 0, "skipped": "Mastra's server has no webhooks"}
    latencies: list[float] = []
    errors = 0
    counter = 0
    stop_at = time.monotonic() + 1.0 + args.seconds
    measure_from = time.monotonic() + 1.0

    async def client() -> None:
        nonlocal errors, counter
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            while time.monotonic() < stop_at:
                counter += 1
                body, extra = signed_delivery(counter)
                head = "".join(f"{k}: {v}\r\n" for k, v in extra.items())
                started = time.monotonic()
                writer.write((f"POST /api/webhooks/github/bench HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{head}\r\n").encode()
                             + body)
                status = int((await reader.readline()).split()[1])
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                if status != 200:
                    errors += 1
                elif started >= measure_from:
                    latencies.append(time.monotonic() - started)
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(args.clients)))
    return {"n": len(latencies), "errors": errors, "per_s": round(len(latencies) / args.seconds, 1),
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1), "p99_ms": round(percentile(latencies, 0.99) * 1000, 1)}


async def case_agents(server, headers, args) -> dict:
    return await closed_loop(server, headers, args.clients, args.seconds, lambda: ("GET", "/api/agents/echo", None))


CASES = {"generate": case_generate, "send": case_send, "sse": case_sse, "github": case_github, "agents": case_agents}


async def run_server(server, cases: list[str], args) -> dict[str, dict]:
    headers = server.start()
    results = {}
    try:
        for name in cases:
            result = await CASES[name](server, headers, args)
            rss, peak = rss_mb(server.proc.pid)
            line = {"server": server.name, "case": name, **result, "rss_mb": rss, "max_rss_mb": peak}
            print(json.dumps(line), flush=True)
            results[name] = line
    finally:
        server.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--rate", type=float, default=20, help="send-messages per second in the sse case")
    parser.add_argument("--servers", default="django,mastra")
    parser.add_argument("--cases", default="generate,sse,send")
    parser.add_argument("--mastra-dir", type=Path, default=DEFAULT_MASTRA_DIR)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.machine import print_machine

    print_machine()
    cases = [c for c in args.cases.split(",") if c]
    results = {}
    for name in args.servers.split(","):
        server = DjangoServer() if name == "django" else MastraServer(args.mastra_dir)
        results[name] = asyncio.run(run_server(server, cases, args))
    if {"django", "mastra"} <= set(results):
        for case in cases:
            ours, theirs = results["django"][case], results["mastra"][case]
            line = {"case": case, "ratio": "django/mastra", "p99_ms": [ours["p99_ms"], theirs["p99_ms"]],
                    "rss_mb": [ours["max_rss_mb"], theirs["max_rss_mb"]]}
            if "per_s" in ours and theirs.get("per_s"):
                line["per_s"] = [ours["per_s"], theirs["per_s"]]
                line["per_s_ratio"] = round(ours["per_s"] / theirs["per_s"], 2)
            if ours.get("cpu_ms") and theirs.get("cpu_ms"):  # CPU per request: theirs / ours (> 1: ours costs less)
                line["cpu_ms"] = [ours["cpu_ms"], theirs["cpu_ms"]]
                line["cpu_ratio"] = round(theirs["cpu_ms"] / ours["cpu_ms"], 2)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
