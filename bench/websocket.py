"""The chat websocket under load: many subscribers on many threads, through real daphne processes.

    .venv/bin/python bench/websocket.py [--cases memory,redis] [--subscribers 1000] [--threads 100]
        [--chunks 200] [--interval-ms 50] [--redis-url redis://127.0.0.1:6379/2] [--database-url URL]
        [--client-processes 2]

Cases:
  memory  one daphne process (``daphne mastra_site.asgi:application``), the in-memory channel layer.
  redis   two daphne processes with channels-redis (``--redis-url``); each thread's subscribers are
          spread over both, so half of them hear the run through Redis and the other process.

Each case: ``--subscribers`` websockets (signed in with one session) on ``--threads`` threads (the
same number on each), then one ``send-message`` per thread starts a run that streams ``--chunks``
text deltas, one every ``--interval-ms``. The model of this bench (:class:`ClockModel`) writes the
time it produced each delta into the delta, so a subscriber's latency is the time it received the
chunk minus that time (same machine, same clock): it covers the runtime, the event log, the channel
layer, daphne and the client's own reading. Reports p50 / p99 / max over every chunk × subscriber,
chunks received against expected, and each server's RSS (current and peak, ``/proc``).

The subscribers are aiohttp websockets (its compiled frame reader) in ``--client-processes``
processes, each with the subscribers of its share of the threads, connected before any run starts;
once connected, a process's objects are frozen out of the garbage collector's full walks. They
answer daphne's keepalive pings (every 20 s) as a browser does; ``errors`` counts the ``error``
frames and any other frame that is not text. A client
whose event loop runs late delays every chunk it reads as much, so ``client_lag_p50_ms`` /
``client_lag_p99_ms`` say how late the clients' loops woke from a 10 ms sleep during the runs: a
chunk's latency beyond that is the servers'. (With one client process of the ``websockets``
library, 1,000 sockets and 20,000 frames a second, its loop woke 150 to 220 ms late at p99 on a
2-vCPU machine, most of the chunks' p99 then.)

The servers run with ``DEBUG=false`` (as deployed) unless ``DEBUG`` is set. The database is a
temporary SQLite file unless ``--database-url`` names one (it is migrated); the ``redis`` case needs
one (PostgreSQL: the site refuses SQLite under several processes). Besides the figures over every
subscriber, ``local_*`` are those of the subscribers on the process that runs their thread's run and
``remote_*`` those of the subscribers on the other one (the chunks came through the channel layer).
Prints a first line on the machine and interpreter (``bench/machine.py``), then one JSON line per
case.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT_ID = "clock"
#: handshakes in flight at once (daphne drops a socket its application has not accepted in 5 s)
CONNECTING = int(os.environ.get("BENCH_CONNECTING", "20"))
STAMP = re.compile(r'"type": "text-delta".*?"text": "t([0-9.]+);"')

_mastra = None


class ClockModel:
    """A model that streams ``chunks`` text deltas, each ``t<unix time>;``, one every ``interval_ms``."""

    provider = "bench"

    def __init__(self, *, chunks: int, interval_ms: float):
        self.model_id = "clock"
        self.chunks = chunks
        self.interval = interval_ms / 1000.0

    async def stream(self, request):
        from agents.runtime.providers.base import usage

        yield {"type": "response-metadata", "id": "clock", "model_id": self.model_id, "timestamp": None, "headers": {}}
        for _ in range(self.chunks):
            await asyncio.sleep(self.interval)
            yield {"type": "text-delta", "text": f"t{time.time():.6f};"}
        yield {"type": "finish", "finish_reason": "stop", "usage": usage(1, self.chunks)}


def __getattr__(name: str):
    """``bench.websocket:mastra`` for the servers (``MASTRA``), built on first use."""
    global _mastra
    if name != "mastra":
        raise AttributeError(name)
    if _mastra is None:
        from agents.memory import Memory
        from agents.runtime import Agent, Mastra

        model = ClockModel(chunks=int(os.environ["BENCH_CHUNKS"]), interval_ms=float(os.environ["BENCH_INTERVAL_MS"]))
        _mastra = Mastra(agents={AGENT_ID: Agent(id=AGENT_ID, name="Clock", instructions="Tell the time.",
                                                 model=model, memory=Memory(last_messages=1))})
    return _mastra


# -- servers ----------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(args, db_url: str, redis_url: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update({"DATABASE_URL": db_url, "MASTRA": "bench.websocket:mastra", "PYTHONPATH": str(ROOT),
                "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "BENCH_CHUNKS": str(args.chunks),
                "BENCH_INTERVAL_MS": str(args.interval_ms), "LOG_LEVEL": "WARNING",
                "MASTRA_CHANNEL_PREFIX": f"bench-ws-{os.getpid()}"})
    # what a deployment pays: DEBUG (on by default on a loopback-only site) logs every SQL statement
    # with its parameters interpolated, a sixth of a server's time here; DEBUG=true measures that
    env.setdefault("DEBUG", "false")
    if redis_url:
        env["REDIS_URL"] = redis_url
        env["WEB_CONCURRENCY"] = "2"
    return env


def prepare_database(env: dict) -> str:
    """Migrate, create the bench user and return a session id signed in as them."""
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    code = ("import django; django.setup()\n"
            "from django.contrib.auth import get_user_model\n"
            "from django.test import Client\n"
            "user, _ = get_user_model().objects.get_or_create(username='bench')\n"
            "c = Client(); c.force_login(user); print(c.cookies['sessionid'].value)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def start_daphne(env: dict, port: int, log: Path) -> subprocess.Popen:
    profile = os.environ.get("BENCH_PROFILE")  # a cProfile output path (written when daphne stops on SIGINT)
    prefix = ["-m", "cProfile", "-o", f"{profile}.{port}"] if profile else []
    with open(log, "wb") as handle:
        return subprocess.Popen([sys.executable, *prefix, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                 "mastra_site.asgi:application"], cwd=ROOT, env=env, stdout=handle,
                                stderr=subprocess.STDOUT)


def wait_listening(port: int, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daphne exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"daphne did not listen on {port}: {log.read_text()[-2000:]}")


def rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of ``pid`` in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return round(values.get("VmRSS", 0), 1), round(values.get("VmHWM", 0), 1)


# -- clients ----------------------------------------------------------------------------------------
async def subscriber(session, url: str, origin: str, ready: asyncio.Event, go: asyncio.Event,
                     starter: bool, latencies: list[float], counts: dict, connecting: asyncio.Semaphore,
                     local: list[float], remote: list[float] | None = None) -> None:
    import aiohttp

    def settled(key: str) -> None:
        counts[key] += 1
        if counts["connected"] + counts["refused"] == counts["expected_subscribers"]:
            ready.set()

    try:
        async with connecting:  # a connection ramp: at most CONNECTING handshakes at a time
            ws = await session.ws_connect(url, origin=origin, max_msg_size=0, autoping=True,
                                          timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=10))
            snapshot = json.loads((await ws.receive()).data)
            assert snapshot["type"] == "snapshot", snapshot
    except Exception:
        settled("refused")
        raise
    settled("connected")
    async with ws:
        await go.wait()
        if starter:
            await ws.send_str(json.dumps({"type": "send-message", "message": "tick"}))
        async for message in ws:
            now = time.time()
            if message.type is not aiohttp.WSMsgType.TEXT:
                counts["errors"] += 1
                continue
            data = message.data
            match = STAMP.search(data)
            if match:
                latencies.append(now - float(match.group(1)))
                (local if remote is None else remote).append(latencies[-1])
                counts["received"] += 1
            elif '"type": "finish"' in data:
                return
            elif '"type": "error"' in data:
                counts["errors"] += 1


def run_clients(args, ports: list[int], cookie: str) -> dict:
    """The subscribers, in ``--client-processes`` processes (each thread's in one of them); once all
    are connected, the runs start together; every process's figures merged."""
    context = multiprocessing.get_context("fork")  # before any event loop of this process
    processes = max(1, args.client_processes)
    connected = context.Barrier(processes + 1)
    results = context.Queue()
    prefix = f"bench-{os.getpid()}"
    workers = [context.Process(target=client_process, args=(args, ports, cookie, prefix, k, processes, connected, results))
               for k in range(processes)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    connected.wait(timeout=600)
    connect_s = time.monotonic() - started
    parts = [results.get(timeout=args.chunks * args.interval_ms / 1000 * 3 + 300) for _ in workers]
    for worker in workers:
        worker.join(30)
    failed = [part["error"] for part in parts if "error" in part]
    if failed:
        raise SystemExit(f"a client process failed: {failed[0]}")
    merged: dict = {key: sorted(value for part in parts for value in part[key])
                    for key in ("latencies", "local", "remote", "lags")}
    counts = {key: sum(part[key] for part in parts) for key in ("received", "errors", "refused", "unfinished", "failures")}
    latencies, local, remote = merged["latencies"], merged["local"], merged["remote"]

    def pick(q: float, values: list[float] = latencies) -> float | None:
        return round(values[min(len(values) - 1, int(q * (len(values) - 1)))] * 1000, 1) if values else None
    return {"connect_s": round(connect_s, 2), "run_s": max(part["run_s"] for part in parts),
            "received": counts["received"], "expected": args.subscribers // args.threads * args.threads * args.chunks,
            "errors": counts["errors"], "refused": counts["refused"], "unfinished": counts["unfinished"],
            "client_failures": counts["failures"],
            "p50_ms": pick(0.5), "p99_ms": pick(0.99),
            "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
            "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else None,
            "local_p50_ms": pick(0.5, local), "local_p99_ms": pick(0.99, local),
            # the subscribers that hear the run through the channel layer (the other process)
            "remote_received": len(remote), "remote_p50_ms": pick(0.5, remote), "remote_p99_ms": pick(0.99, remote),
            "remote_max_ms": round(remote[-1] * 1000, 1) if remote else None,
            # how late the clients' own event loops woke (a 10 ms sleep in a loop): time a chunk
            # waited in a client, not in a server
            "client_processes": processes,
            "client_lag_p50_ms": pick(0.5, merged["lags"]), "client_lag_p99_ms": pick(0.99, merged["lags"])}


def client_process(args, ports, cookie, prefix, index, processes, connected, results) -> None:
    try:
        results.put(asyncio.run(client_share(args, ports, cookie, prefix, index, processes, connected)))
    except BaseException as error:  # the parent stops waiting: at the barrier, or for this result
        connected.abort()
        results.put({"error": repr(error)})
        raise


async def client_share(args, ports, cookie, prefix, index, processes, connected) -> dict:
    """The subscribers of every ``processes``-th thread from ``index``, in this process."""
    import aiohttp

    latencies: list[float] = []
    # the subscribers on the process that runs their thread's run, and those on another one
    local: list[float] = []
    remote: list[float] = []
    per_thread = args.subscribers // args.threads
    threads = range(index, args.threads, processes)
    counts = {"received": 0, "errors": 0, "connected": 0, "refused": 0, "expected_subscribers": per_thread * len(threads)}
    ready, go = asyncio.Event(), asyncio.Event()
    connecting = asyncio.Semaphore(max(1, CONNECTING // processes))
    tasks = []
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), cookie_jar=aiohttp.DummyCookieJar(),
                                    headers={"Cookie": f"sessionid={cookie}"})
    async with session:
        for t in threads:
            thread_id = f"{prefix}-{t}"
            for s in range(per_thread):
                port = ports[(t + s) % len(ports)]  # the run is on ports[t % len(ports)] (``s == 0`` starts it)
                url = f"ws://127.0.0.1:{port}/ws/agents/{AGENT_ID}/threads/{thread_id}/"
                tasks.append(asyncio.ensure_future(subscriber(session, url, f"http://127.0.0.1:{port}", ready, go,
                                                              s == 0, latencies, counts, connecting, local,
                                                              remote if port != ports[t % len(ports)] else None)))
        if tasks:
            await asyncio.wait_for(ready.wait(), timeout=600)
        # what is connected stays: out of the collector's full walks (a client's pause is a chunk's delay)
        gc.collect()
        gc.freeze()
        await asyncio.get_running_loop().run_in_executor(None, connected.wait, 600)
        go.set()
        run_started = time.monotonic()
        lags: list[float] = []

        async def lag_sampler() -> None:
            while True:
                before = time.monotonic()
                await asyncio.sleep(0.01)
                lags.append(time.monotonic() - before - 0.01)

        sampler = asyncio.ensure_future(lag_sampler())
        done, pending = (await asyncio.wait(tasks, timeout=args.chunks * args.interval_ms / 1000 * 3 + 120)
                         if tasks else (set(), set()))
        sampler.cancel()
        for task in pending:
            task.cancel()
    return {"latencies": latencies, "local": local, "remote": remote, "lags": lags,
            "received": counts["received"], "errors": counts["errors"], "refused": counts["refused"],
            "unfinished": len(pending), "failures": sum(1 for t in done if t.exception() is not None),
            "run_s": round(time.monotonic() - run_started, 2)}


def run_case(args, case: str, workdir: Path) -> dict:
    if case == "redis" and not args.database_url:
        raise SystemExit("the redis case runs two processes: give it --database-url (PostgreSQL)")
    db_url = args.database_url or f"sqlite:///{workdir / f'{case}.sqlite3'}"
    redis_url = args.redis_url if case == "redis" else None
    env = server_env(args, db_url, redis_url)
    cookie = prepare_database(env)
    ports = [free_port() for _ in range(2 if case == "redis" else 1)]
    procs = []
    try:
        for port in ports:
            log = workdir / f"daphne-{case}-{port}.log"
            procs.append((start_daphne(env, port, log), port, log))
        for proc, port, log in procs:
            wait_listening(port, proc, log)
        result = run_clients(args, ports, cookie)
        rss = [rss_mb(proc.pid) for proc, _, _ in procs]
    finally:
        for proc, _, _ in procs:
            proc.send_signal(signal.SIGINT)  # daphne stops its reactor and exits cleanly
        for proc, _, _ in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"case": f"websocket-{case}", "servers": len(ports), "subscribers": args.subscribers, "threads": args.threads,
            "chunks_per_thread": args.chunks, "interval_ms": args.interval_ms,
            "database": "sqlite" if db_url.startswith("sqlite") else "postgresql", **result,
            "rss_mb": [r[0] for r in rss], "peak_rss_mb": [r[1] for r in rss]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="memory,redis")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--interval-ms", type=float, default=50.0)
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--client-processes", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.machine import print_machine

    print_machine()
    workdir = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    try:
        for case in args.cases.split(","):
            print(json.dumps(run_case(args, case.strip(), workdir)), flush=True)
    finally:
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
