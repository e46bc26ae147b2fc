"""How many threads and subscribers one serving process holds: memory per subscriber and per active
thread, and the rate of sends into threads, through one real daphne on PostgreSQL and Redis.

    .venv/bin/python bench/sizing.py [--database-url postgres://postgres@127.0.0.1:5432/postgres]
        [--redis-url redis://127.0.0.1:6379/0] [--cases ws-idle,sse-idle,active,send,send-one]
        [--subscribers 500] [--threads 50] [--clients 20] [--seconds 10]

The database URL names a PostgreSQL server (and a database to connect to on it): the bench creates a
database of its own there (``mastra_sizing_<pid>``), migrates it and drops it at the end. Redis keys
carry a prefix of their own (``MASTRA_CHANNEL_PREFIX``), deleted at the end.

Each case starts a fresh daphne (``mastra_site.asgi:application``, the Procfile's flags, ``DEBUG``
off, ``DB_CONN_MAX_AGE=0``), warms it (one page, one websocket, one SSE subscription, one send into a
thread, each closed again), reads its resident memory (``VmRSS``, ``/proc``), puts the load on, waits
for it to settle, reads it again; the difference divided by the load is the memory of one unit:

  ws-idle   ``--subscribers`` chat websockets (``/ws/agents/<id>/threads/<id>/``, one session), each on a
            thread of its own, idle (no run).
  sse-idle  ``--subscribers`` SSE subscriptions (``POST /api/agents/<id>/threads/subscribe``, a token),
            each on a thread of its own, idle.
  active    ``--threads`` threads each with a run in progress (a model that streams one text delta
            every 500 ms until the server stops), no subscriber: the thread's lease, runner, run and
            batches. The sends that start the runs go one after the other: their latency while the
            first and while the last tenth of the runs stream shows what the running threads cost a
            send into the same process.
  send      ``--clients`` keep-alive HTTP clients, each sending ``send-message`` into its own thread
            again and again for ``--seconds`` (the ``local/echo`` agent with memory: each send is
            stored, wakes the thread or joins its run, and the run answers): sends/s, p50 / p99, the
            server's CPU time per send (request and run together) and the rate one whole core would
            give at that cost, and the memory after it.
  send-one  the same with one client: the latency of a send on a process that does nothing else.

``active`` also reports the server's CPU use while the runs stream. The wall-clock rates depend on
what else the machine runs (the first line gives its load average); the CPU figures much less.

Prints one JSON line per case, and a first line describing the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_api import Connection, free_port, percentile, rss_mb  # noqa: E402

#: handshakes in flight at once (daphne drops a socket its application has not accepted in 5 s)
CONNECTING = 20
#: the Procfile's websocket limits (MASTRA_CHAT_MAX_FRAME_BYTES + 65536)
FRAME = "1179648"
HOLD_INTERVAL_S = 0.5
HOLD_SECONDS = 3600.0  # longer than any case: the runs end when the server stops

_mastra = None


class HoldModel:
    """A model whose answer takes ``HOLD_SECONDS``: one text delta every ``HOLD_INTERVAL_S``."""

    provider = "bench"
    model_id = "hold"

    async def stream(self, request):
        from agents.runtime.providers.base import usage

        yield {"type": "response-metadata", "id": "hold", "model_id": self.model_id, "timestamp": None, "headers": {}}
        for _ in range(int(HOLD_SECONDS / HOLD_INTERVAL_S)):
            await asyncio.sleep(HOLD_INTERVAL_S)
            yield {"type": "text-delta", "text": "."}
        yield {"type": "finish", "finish_reason": "stop", "usage": usage(1, 1)}


def __getattr__(name: str):
    """``bench.sizing:mastra`` for the server (``MASTRA``): ``echo`` (``local/echo``) and ``hold``."""
    global _mastra
    if name != "mastra":
        raise AttributeError(name)
    if _mastra is None:
        from agents.memory import Memory
        from agents.runtime import Agent, Mastra

        _mastra = Mastra(agents={
            "echo": Agent(id="echo", name="Echo", instructions="Repeat.", model="local/echo",
                          memory=Memory(last_messages=20)),
            "hold": Agent(id="hold", name="Hold", instructions="Take your time.", model=HoldModel(),
                          memory=Memory(last_messages=20)),
        })
    return _mastra


# -- the database and the server -------------------------------------------------------------------
def database_url_named(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def admin_sql(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("postgres://", "postgresql://", 1), autocommit=True) as connection:
        connection.execute(statement)


class Site:
    """A database of the bench's own, migrated, with one user (a session and a token)."""

    def __init__(self, args) -> None:
        self.admin_url = args.database_url
        self.name = f"mastra_sizing_{os.getpid()}"
        self.prefix = f"bench-sizing-{os.getpid()}"
        self.redis_url = args.redis_url
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-sizing-"))
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
        self.env.update({
            "DATABASE_URL": database_url_named(self.admin_url, self.name), "REDIS_URL": self.redis_url,
            "MASTRA_CHANNEL_PREFIX": self.prefix, "MASTRA": "bench.sizing:mastra", "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1",
            "SECRET_KEY": uuid.uuid4().hex * 2, "LOG_LEVEL": "WARNING", "MASTRA_API_SEND_RATE": "100000000/min",
            "MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S": "3600"})

    def create(self) -> None:
        admin_sql(self.admin_url, f'CREATE DATABASE "{self.name}"')
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=self.env,
                       check=True)
        code = ("from django.contrib.auth import get_user_model\n"
                "from django.test import Client\n"
                "from rest_framework.authtoken.models import Token\n"
                "user, _ = get_user_model().objects.get_or_create(username='bench')\n"
                "c = Client(); c.force_login(user)\n"
                "print(c.cookies['sessionid'].value, Token.objects.get_or_create(user=user)[0].key)\n")
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=self.env, check=True,
                             capture_output=True, text=True).stdout
        self.session, self.token = out.strip().splitlines()[-1].split()

    def drop(self) -> None:
        admin_sql(self.admin_url, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        import redis

        client = redis.Redis.from_url(self.redis_url)
        for key in client.scan_iter(match=f"*{self.prefix}*", count=1000):
            client.delete(key)


class Server:
    """One daphne with the Procfile's flags on a free port."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.port = free_port()
        self.log = site.workdir / f"daphne-{self.port}.log"
        with open(self.log, "wb") as handle:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daphne", "--websocket-max-message-size", FRAME, "--websocket-max-frame-size",
                 FRAME, "--proxy-headers", "-b", "127.0.0.1", "-p", str(self.port), "mastra_site.asgi:application"],
                cwd=ROOT, env=site.env, stdout=handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log.read_text()[-2000:]}")
            try:
                import socket

                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"daphne did not listen: {self.log.read_text()[-2000:]}") from None
                time.sleep(0.2)

    def rss(self) -> float:
        return rss_mb(self.proc.pid)[0]

    def cpu_s(self) -> float:
        """CPU seconds the server has used (user + system), a figure the other load of a shared
        machine does not inflate the way it inflates wall-clock rates."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- clients ---------------------------------------------------------------------------------------
async def websocket_open(server: Server, agent: str, thread_id: str):
    import websockets

    ws = await websockets.connect(f"ws://127.0.0.1:{server.port}/ws/agents/{agent}/threads/{thread_id}/",
                                  origin=f"http://127.0.0.1:{server.port}", max_size=None, open_timeout=120,
                                  ping_interval=None, additional_headers={"Cookie": f"sessionid={server.site.session}"})
    first = json.loads(await ws.recv())
    if first["type"] != "snapshot":
        raise RuntimeError(f"first frame {first!r}")
    return ws


async def sse_open(server: Server, agent: str, thread_id: str) -> Connection:
    connection = Connection(server.port, {"Authorization": f"Token {server.site.token}"})
    headers = await connection.send("POST", f"/api/agents/{agent}/threads/subscribe", {"threadId": thread_id})
    if headers[":status"] != "200":
        raise RuntimeError(f"subscribe answered {headers[':status']}")
    pieces = connection.chunks(headers)
    first = await pieces.__anext__()  # ": connected"
    if not first.startswith(b":"):
        raise RuntimeError(f"first bytes {first!r}")
    return connection


async def send(connection: Connection, agent: str, thread_id: str, message: str = "hello") -> None:
    status, body = await connection.request("POST", f"/api/agents/{agent}/send-message",
                                            {"message": message, "threadId": thread_id})
    if status != 200:
        raise RuntimeError(f"send-message answered {status}: {body[:200]!r}")


async def warm(server: Server) -> None:
    """One of everything, closed again: the imports, the pools and the caches of a first request."""
    thread_id = f"warm-{uuid.uuid4().hex[:8]}"
    page = Connection(server.port, {})
    await page.request("GET", "/login/")
    page.close()
    ws = await websocket_open(server, "echo", thread_id)
    sse = await sse_open(server, "echo", thread_id)
    sender = Connection(server.port, {"Authorization": f"Token {server.site.token}"})
    await send(sender, "echo", thread_id)
    await asyncio.sleep(1.0)
    sender.close()
    sse.close()
    await ws.close()
    await asyncio.sleep(1.0)


async def settle() -> None:
    await asyncio.sleep(3.0)


async def case_ws_idle(server: Server, args) -> dict:
    gate = asyncio.Semaphore(CONNECTING)

    async def one(n: int):
        async with gate:
            return await websocket_open(server, "echo", f"ws-{n}")

    before = server.rss()
    sockets = await asyncio.gather(*(one(n) for n in range(args.subscribers)))
    await settle()
    after = server.rss()
    await asyncio.gather(*(ws.close() for ws in sockets))
    return {"subscribers": len(sockets), "rss_before_mb": before, "rss_after_mb": after,
            "kb_per_subscriber": round((after - before) * 1024 / len(sockets), 1)}


async def case_sse_idle(server: Server, args) -> dict:
    gate = asyncio.Semaphore(CONNECTING)

    async def one(n: int) -> Connection:
        async with gate:
            return await sse_open(server, "echo", f"sse-{n}")

    before = server.rss()
    connections = await asyncio.gather(*(one(n) for n in range(args.subscribers)))
    await settle()
    after = server.rss()
    for connection in connections:
        connection.close()
    return {"subscribers": len(connections), "rss_before_mb": before, "rss_after_mb": after,
            "kb_per_subscriber": round((after - before) * 1024 / len(connections), 1)}


async def case_active(server: Server, args) -> dict:
    before = server.rss()
    sender = Connection(server.port, {"Authorization": f"Token {server.site.token}"})
    latencies = []
    for n in range(args.threads):
        started = time.monotonic()
        await send(sender, "hold", f"active-{n}")
        latencies.append(time.monotonic() - started)
    sender.close()
    await settle()
    after = server.rss()
    cpu, started = server.cpu_s(), time.monotonic()
    await asyncio.sleep(5.0)
    busy = (server.cpu_s() - cpu) / (time.monotonic() - started)
    tenth = max(1, args.threads // 10)
    return {"threads": args.threads, "deltas_per_s_per_thread": 1 / HOLD_INTERVAL_S, "rss_before_mb": before,
            "rss_after_mb": after, "kb_per_thread": round((after - before) * 1024 / args.threads, 1),
            "server_cpu_percent": round(busy * 100, 1),
            "send_ms_first_tenth": round(percentile(latencies[:tenth], 0.5) * 1000, 1),
            "send_ms_last_tenth": round(percentile(latencies[-tenth:], 0.5) * 1000, 1)}


async def case_send(server: Server, args, clients: int | None = None) -> dict:
    clients = clients or args.clients
    before = server.rss()
    latencies: list[float] = []
    sent = [0]
    warm_until = time.monotonic() + 1.0
    stop_at = warm_until + args.seconds

    async def client(n: int) -> None:
        connection = Connection(server.port, {"Authorization": f"Token {server.site.token}"})
        thread_id = f"send-{n}"
        try:
            while time.monotonic() < stop_at:
                started = time.monotonic()
                await send(connection, "echo", thread_id)
                sent[0] += 1
                if started >= warm_until:
                    latencies.append(time.monotonic() - started)
        finally:
            connection.close()

    cpu = server.cpu_s()
    await asyncio.gather(*(client(n) for n in range(clients)))
    await settle()  # the last runs end
    cpu_ms = (server.cpu_s() - cpu) * 1000 / max(1, sent[0])
    return {"clients": clients, "seconds": args.seconds, "n": len(latencies),
            "per_s": round(len(latencies) / args.seconds, 1), "server_cpu_ms_per_send": round(cpu_ms, 1),
            "per_s_on_one_core": round(1000 / cpu_ms, 1),
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1), "p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
            "rss_before_mb": before, "rss_after_mb": server.rss()}


async def case_send_one(server: Server, args) -> dict:
    return await case_send(server, args, clients=1)


CASES = {"ws-idle": case_ws_idle, "sse-idle": case_sse_idle, "active": case_active, "send": case_send,
         "send-one": case_send_one}


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.machine())
    memory_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                         if line.startswith("MemTotal")))
    return {"case": "machine", "date": time.strftime("%Y-%m-%d"), "cpu": cpu, "cores": os.cpu_count(),
            "memory_gb": round(memory_kb / 1024 / 1024, 1), "python": platform.python_version(),
            "os": platform.platform(terse=True), "load_average_1m": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL",
                                                                 "postgres://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--subscribers", type=int, default=500)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if not args.database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("--database-url must name a PostgreSQL server")
    print(json.dumps(machine()), flush=True)
    site = Site(args)
    site.create()
    try:
        for name in args.cases.split(","):
            server = Server(site)
            try:
                asyncio.run(warm(server))
                result = asyncio.run(CASES[name.strip()](server, args))
            finally:
                server.stop()
            print(json.dumps({"case": name.strip(), "database": "postgresql", "channel_layer": "redis-pubsub",
                              "db_conn_max_age": int(site.env.get("DB_CONN_MAX_AGE") or 0), **result}), flush=True)
    finally:
        site.drop()


if __name__ == "__main__":
    main()
