"""Many concurrent tool-loop runs in one daphne process, against a model that takes 300 ms a step,
beside Mastra's own server with the same agent against the same model.

    .venv/bin/python bench/concurrency.py [--runs 500] [--delay-ms 300] [--timeout 180] [--warmup 5] [--repeat 1]
        [--servers django,mastra] [--mastra-dir /tmp/mref-x]   (a copy of ../shared/reference/mastra
        with ``npm ci`` done)

One daphne process (``mastra_site.asgi:application``) serves the ``pinger`` agent of this module
(``MASTRA=bench.concurrency:mastra``): ``openai/mock`` with memory (``Memory(last_messages=10)``) and
a tool ``ping`` (a pure function marked ``quick``). The model is a mock OpenAI Chat Completions
server (streamed SSE chunks, as the ``openai`` SDK reads them; aiohttp) started by this script in a
process of its own (the clients' work cannot delay its clock readings), which daphne reaches through
``OPENAI_BASE_URL`` (``OPENAI_API_KEY=bench``). Every request waits
``--delay-ms`` then answers: a call of ``ping`` while the request holds fewer than two tool results,
text after. Each run is thus three model steps; the mock tells runs apart by their user message.

The script makes ``--runs`` threads, subscribes to each (the HTTP API's SSE route
``threads/subscribe``, token auth), then sends one ``send-message`` per thread, all at once (50
connections), and waits for every thread's ``finish`` chunk. ``--warmup`` runs before (not measured)
import the SDK and open the first connections; ``--repeat`` measures again on the same daphne.

``mastra`` (``--servers``): Mastra 1.71's own server (``createNodeServer``, the routes ``mastra dev``
serves, LibSQL in a temporary file; ``bench/concurrency_mastra.mjs``, run from the Mastra directory
with its own ``node`` as ``bench/http_api.py`` does), with the same agent: an OpenAI-compatible chat model
(``{id: 'custom/mock', url}``, the AI SDK's client) at the same mock, ``Memory`` with
``lastMessages: 10``, a tool ``ping``, the same lag timer (a 10 ms ``setInterval``). The same
clients measure it the same way, after this project's daphne, against the same mock process.

Prints a first line on the machine and interpreter (``bench/machine.py``), then one JSON line per
server and repetition (``server``: django or mastra):
  completed              the finishes seen by the subscribers (target: every run)
  framework_p50/p99/max_ms  the framework's own time between two model steps of a run: from the
                         moment the mock finished answering step k to the moment it received the
                         request of step k+1 (the stream's end, the tool call, the loop, the
                         events and messages written, the next request built and sent); two per
                         run. Target: p99 < 3 ms
  wake_p50/p99_ms        send-message sent → the mock received the run's first request
  tail_p50/p99_ms        the mock finished the last step → the subscriber read ``finish``
  run_p50/p99_ms         send-message sent → ``finish`` read (three steps of ``--delay-ms``)
  lag_p99/max_ms         the event-loop lag inside daphne while the runs were going: a task of
                         this module (started when ``BENCH_LAG_FILE`` is set) sleeps 10 ms in a
                         loop and records how late it woke. Target: p99 < 20 ms
  gc_collections, gc_full, gc_ms, gc_max_ms  what the cyclic garbage collector took of that
                         time inside daphne: its collections (``gc_full`` of them of the oldest
                         generation), their time in all and the longest (``gc.callbacks``; every
                         thread of the process stands still during one, the event loop's
                         included). A lag well above ``gc_max_ms`` is the loop's turns, not the
                         collector. Not printed for Mastra's server
  server_cpu_s, cpu_ms_per_run  the server's CPU time (every thread, ``/proc``) from the first
                         send-message to the last ``finish``, and that per completed run (its
                         send, three steps, the tool call and the end; its subscriber's stream):
                         the framework's own work, which the gaps above add the waits to (on a
                         busy process a step's gap is mostly its turn behind other runs' work)
  rss_mb, max_rss_mb     the server's resident memory after the runs, and its peak (``/proc``)

and with both servers one ``ratio`` line per repetition: each figure as [django, mastra].

Before the servers, two ``floor`` lines (``--floor`` conversations each; ``0``: none): the same gap
with no framework, a client alone against the same mock making three-step conversations one after
the other, each next request sent as soon as the answer before it is read: ``client`` ``aiohttp``
(a bare session) and ``openai-sdk`` (the SDK as the model adapter calls it, over aiohttp).
``gap_p50/p99/max_ms`` is what a step's gap cannot go below on this machine with that client (the
wake after the model's wait, reading the answer, sending the next request); ``--runs 1`` gives the
framework's own gap on an idle server to set beside it.

Limits lifted for the bench through daphne's environment: ``MASTRA_API_SEND_RATE`` (100000000/min),
``MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE`` and ``MASTRA_MAX_ACTIVE_RUNS_PER_AGENT`` (0: none; the
defaults), the notification dispatcher's interval (an hour). Nothing else limits the number of
runs of a process. The database is a temporary SQLite file unless ``DATABASE_URL`` names one (it
is migrated). ``BENCH_KEEP=1`` keeps the temporary directory (daphne's stderr, the lag samples).
The clients and the mock share the machine with daphne: timings are wall clock. The daphne and mock
pids are printed on stderr, for ``py-spy record --pid``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import shutil
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT_ID = "pinger"
RESOURCE = "bench"
#: send-message requests in flight at once, and subscriptions being opened at once
SENDERS = 50
CONNECTING = 50

_mastra = None


# -- the site (in daphne) ---------------------------------------------------------------------------
def ping(input: dict) -> dict:
    return {"pong": input.get("n", 0)}


#: the collector's collections not written yet: ``<unix time> <generation> <ms>`` lines
_collections: list[str] = []


def _collection_timer():
    """A ``gc.callbacks`` hook that adds a line to :data:`_collections` for each collection."""
    started = [0.0]

    def timer(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            _collections.append(f"{time.time():.4f} {info['generation']} {(time.perf_counter() - started[0]) * 1000:.3f}\n")
    return timer


async def lag_monitor(path: str, interval: float = 0.010) -> None:
    """Sleep ``interval`` in a loop; append ``<unix time> <ms late>`` lines to ``path`` every half
    second, and the collector's collections since (:data:`_collections`) to ``path + ".gc"``."""
    samples: list[str] = []
    flushed = time.monotonic()
    while True:
        before = time.monotonic()
        await asyncio.sleep(interval)
        now = time.monotonic()
        samples.append(f"{time.time():.4f} {(now - before - interval) * 1000:.3f}\n")
        if now - flushed >= 0.5:
            with open(path, "a") as handle:
                handle.writelines(samples)
            samples.clear()
            collections = _collections[:]  # a collection on another thread may add one meanwhile
            del _collections[:len(collections)]
            with open(collections_file(Path(path)), "a") as handle:
                handle.writelines(collections)
            flushed = now


def _start_lag_monitor(path: str) -> None:
    from twisted.internet import reactor  # daphne's asyncio reactor: the loop that serves the site

    def start() -> None:
        gc.callbacks.append(_collection_timer())
        _start_lag_monitor.task = asyncio.ensure_future(lag_monitor(path))

    reactor.callFromThread(start)


def __getattr__(name: str):
    """``bench.concurrency:mastra`` for daphne (``MASTRA``), built on first use."""
    global _mastra
    if name != "mastra":
        raise AttributeError(name)
    if _mastra is None:
        from agents.memory import Memory
        from agents.runtime import Agent, Mastra, create_tool

        tool = create_tool(id="ping", description="Answers pong.", execute=ping, quick=True,
                           input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
        _mastra = Mastra(agents={AGENT_ID: Agent(
            id=AGENT_ID, name="Pinger", instructions="Call ping twice, then answer.", model="openai/mock",
            tools={"ping": tool}, memory=Memory(last_messages=10))})
        if os.environ.get("BENCH_LAG_FILE"):
            _start_lag_monitor(os.environ["BENCH_LAG_FILE"])
    return _mastra


# -- the mock model (a process of its own) ----------------------------------------------------------
def _sse(chunk: dict | str) -> bytes:
    return b"data: " + (chunk if isinstance(chunk, str) else json.dumps(chunk)).encode() + b"\n\n"


def _chunk(delta: dict | None = None, finish_reason: str | None = None, usage: dict | None = None) -> dict:
    chunk = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1700000000, "model": "mock",
             "choices": [] if usage else [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]}
    if usage:
        chunk["usage"] = usage
    return chunk


def _answer(step: int) -> bytes:
    usage = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    if step < 2:
        chunks = [_chunk({"role": "assistant", "content": None, "tool_calls": [
                     {"index": 0, "id": f"call_{step}", "type": "function",
                      "function": {"name": "ping", "arguments": ""}}]}),
                  _chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"n": step})}}]}),
                  _chunk({}, "tool_calls"), _chunk(usage=usage)]
    else:
        chunks = [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "pong pong"}),
                  _chunk({}, "stop"), _chunk(usage=usage)]
    return b"".join(_sse(c) for c in chunks) + _sse("[DONE]")


def _run_key(messages: list[dict]) -> tuple[str, int]:
    """(the run's user message, the step: the tool results the request holds)."""
    key, step = "", 0
    for message in messages:
        if message.get("role") == "user" and not key:
            content = message.get("content")
            key = content if isinstance(content, str) else " ".join(
                p.get("text", "") for p in content or [] if isinstance(p, dict))
        elif message.get("role") == "tool":
            step += 1
    return key, step


def serve_mock(port: int, delay: float, ready) -> None:
    """The mock model's server: ``POST /v1/chat/completions``; ``GET /stats`` gives, per run, the
    times (``time.monotonic``, shared by the processes of a machine) each step's request came and
    its answer ended."""
    from aiohttp import web

    received: dict[str, dict[int, float]] = {}
    answered: dict[str, dict[int, float]] = {}
    answers = [_answer(0), _answer(1), _answer(2)]

    async def completions(request: web.Request) -> web.StreamResponse:
        came = time.monotonic()
        body = await request.json()
        key, step = _run_key(body.get("messages") or [])
        received.setdefault(key, {})[step] = came
        await asyncio.sleep(delay)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "x-request-id": "req_mock"})
        await response.prepare(request)
        await response.write(answers[min(step, 2)])
        await response.write_eof()
        answered.setdefault(key, {})[step] = time.monotonic()
        return response

    async def stats(request: web.Request) -> web.Response:
        return web.json_response({"received": received, "answered": answered})

    app = web.Application(client_max_size=2 ** 24)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/stats", stats)
    ready.set()
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None, backlog=1024)


# -- the bench --------------------------------------------------------------------------------------
def percentiles(values: list[float], prefix: str) -> dict:
    from bench.http_api import percentile

    ms = [v * 1000 for v in values]
    return {f"{prefix}_p50_ms": round(percentile(ms, 0.5), 2), f"{prefix}_p99_ms": round(percentile(ms, 0.99), 2),
            f"{prefix}_max_ms": round(max(ms), 2) if ms else None}


async def mock_stats(mock_port: int) -> dict:
    """The mock's ``GET /stats``: when each run's step requests came and their answers ended."""
    from bench.http_api import Connection

    connection = Connection(mock_port, {})
    try:
        _, data = await connection.request("GET", "/stats")
    finally:
        connection.close()
    return json.loads(data)


def run_times(stats: dict, key: str) -> tuple[dict[int, float], dict[int, float]]:
    """The times the run ``key``'s step requests came and its answers ended, by step."""
    return ({int(k): v for k, v in stats["received"].get(key, {}).items()},
            {int(k): v for k, v in stats["answered"].get(key, {}).items()})


def collections_file(lag_file: Path) -> Path:
    """Where the lag monitor writes the collector's collections, beside its lag samples."""
    return Path(f"{lag_file}.gc")


def window_samples(path: Path, began: float, ended: float) -> list[list[str]]:
    """The lines of ``path`` (``<unix time> <fields…>``) stamped from ``began`` to ``ended``: their
    other fields (none when the file is not there)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        at, *fields = line.split()
        if began <= float(at) <= ended:
            rows.append(fields)
    return rows


def step_gaps(came: dict[int, float], ended: dict[int, float]) -> list[float]:
    """A run's gaps: from the end of each step's answer to the request of the next step."""
    return [came[k + 1] - ended[k] for k in ended if k + 1 in came]


async def measure(server, headers: dict, args, mock_port: int, lag_file: Path, runs: int) -> dict:
    from bench.http_api import Connection, cpu_s

    threads = [f"conc-{uuid.uuid4().hex[:12]}" for _ in range(runs)]
    sent_at: dict[str, float] = {}
    finished_at: dict[str, float] = {}
    errors: list[str] = []
    all_finished = asyncio.Event()
    connecting = asyncio.Semaphore(CONNECTING)

    async def subscriber(thread_id: str, ready: asyncio.Event) -> None:
        connection = Connection(server.port, headers)
        async with connecting:
            response = await connection.send("POST", f"/api/agents/{AGENT_ID}/threads/subscribe",
                                              {"resourceId": RESOURCE, "threadId": thread_id})
            buffer = b""
            pieces = connection.chunks(response)
            buffer += await pieces.__anext__()  # ": connected"
        ready.set()
        try:
            async for piece in pieces:
                buffer += piece
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    data = next((line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")), None)
                    if data is None:
                        continue
                    kind = json.loads(data).get("type")
                    if kind == "error":
                        errors.append(data.decode()[:300])
                    elif kind == "finish" and thread_id in sent_at:
                        finished_at[thread_id] = time.monotonic()
                        if len(finished_at) == len(threads):
                            all_finished.set()
                        return
        finally:
            connection.close()

    readies = [asyncio.Event() for _ in threads]
    tasks = [asyncio.create_task(subscriber(t, r)) for t, r in zip(threads, readies)]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 120)

    queue: asyncio.Queue[str] = asyncio.Queue()
    for thread_id in threads:
        queue.put_nowait(thread_id)
    refused: list[str] = []

    async def sender() -> None:
        connection = Connection(server.port, headers)
        try:
            while not queue.empty():
                thread_id = queue.get_nowait()
                sent_at[thread_id] = time.monotonic()
                status, body = await connection.request("POST", f"/api/agents/{AGENT_ID}/send-message", {
                    "message": f"ping {thread_id}", "resourceId": RESOURCE, "threadId": thread_id})
                if status != 200:
                    refused.append(f"{status} {body[:200]!r}")
        finally:
            connection.close()

    began = time.monotonic()
    began_wall = time.time()
    began_cpu = cpu_s(server.proc.pid)
    await asyncio.gather(*(sender() for _ in range(SENDERS)))
    sent_s = time.monotonic() - began
    try:
        await asyncio.wait_for(all_finished.wait(), args.timeout)
    except asyncio.TimeoutError:
        pass
    wall_s = time.monotonic() - began
    ended_wall = time.time()
    server_cpu_s = cpu_s(server.proc.pid) - began_cpu
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    stats = await mock_stats(mock_port)
    gaps, wakes, tails = [], [], []
    for thread_id in threads:
        came, ended = run_times(stats, f"ping {thread_id}")
        gaps += step_gaps(came, ended)
        if 0 in came and thread_id in sent_at:
            wakes.append(came[0] - sent_at[thread_id])
        if 2 in ended and thread_id in finished_at:
            tails.append(finished_at[thread_id] - ended[2])

    await asyncio.sleep(0.7)  # the lag monitor's last flush
    lags = [float(late) / 1000 for (late,) in window_samples(lag_file, began_wall, ended_wall)]
    gc_file = collections_file(lag_file)
    collections = [(int(generation), float(took))
                   for generation, took in window_samples(gc_file, began_wall, ended_wall)]
    runs = [finished_at[t] - sent_at[t] for t in finished_at]
    result = {"runs": len(threads), "completed": len(finished_at), "refused": len(refused),
              "errors": len(errors), "sent_s": round(sent_s, 2), "wall_s": round(wall_s, 2),
              "server_cpu_s": round(server_cpu_s, 2),
              "cpu_ms_per_run": round(server_cpu_s * 1000 / max(1, len(finished_at)), 2),
              "steps": sum(len(stats["answered"].get(f"ping {t}", {})) for t in threads), "gaps": len(gaps),
              **percentiles(gaps, "framework"), **percentiles(wakes, "wake"), **percentiles(tails, "tail"),
              **percentiles(runs, "run"), "lag_samples": len(lags),
              **{k: v for k, v in percentiles(lags, "lag").items() if not k.startswith("lag_p50")}}
    if gc_file.exists():
        result.update({"gc_collections": len(collections), "gc_full": sum(1 for g, _ in collections if g == 2),
                       "gc_ms": round(sum(took for _, took in collections), 1),
                       "gc_max_ms": round(max((took for _, took in collections), default=0.0), 2)})
    if refused or errors:
        result["first_problem"] = (refused + errors)[0]
    return result


async def measure_floor(mock_port: int, client: str, conversations: int) -> dict:
    """The gap between two steps without a framework: ``conversations`` three-step conversations in a
    row against the mock, each next request sent as soon as the answer before it is read, through
    ``client``: ``aiohttp`` (a bare ``ClientSession``) or ``openai-sdk`` (``AsyncOpenAI`` over its
    ``DefaultAioHttpClient``, called as the model adapter calls it: ``post`` of the body as it is,
    the chunks read as parsed JSON). What a step's gap cannot go below on this machine with that
    client: waking after the model's wait, reading the answer, sending the next request."""
    import aiohttp
    import openai

    url = f"http://127.0.0.1:{mock_port}/v1"
    tag = f"floor {client} {uuid.uuid4().hex[:8]}"
    if client == "aiohttp":
        session = aiohttp.ClientSession()

        async def call(body: dict) -> None:
            async with session.post(f"{url}/chat/completions", json=body) as response:
                await response.read()

        close = session.close
    else:
        sdk = openai.AsyncOpenAI(base_url=url, api_key="bench", http_client=openai.DefaultAioHttpClient())

        async def call(body: dict) -> None:
            stream = await sdk.post("/chat/completions", body=body, cast_to=object, stream=True,
                                    stream_cls=openai.AsyncStream[object])
            async for _ in stream:
                pass

        close = sdk.close
    keys = []
    try:
        for index in range(conversations + 1):  # the first opens the connection: not counted
            key = f"{tag} {index}"
            messages: list[dict] = [{"role": "user", "content": key}]
            for step in range(3):
                await call({"model": "mock", "messages": messages, "stream": True})
                messages = messages + [{"role": "tool", "tool_call_id": f"call_{step}", "content": "{}"}]
            keys.append(key)
    finally:
        await close()
    stats = await mock_stats(mock_port)
    gaps = [gap for key in keys[1:] for gap in step_gaps(*run_times(stats, key))]
    return {"case": "floor", "client": client, "conversations": conversations, "gaps": len(gaps),
            **percentiles(gaps, "gap")}


class MastraConcurrencyServer:
    """Mastra's own server with the same agent (``bench/concurrency_mastra.mjs``, copied into the
    Mastra directory for its imports and removed after), against the same mock model."""
    name = "mastra"
    script = "concurrency_mastra.mjs"

    def __init__(self, directory: Path, mock_port: int) -> None:
        self.directory, self.mock_port = directory, mock_port
        self.server = self.proc = None
        self.tmp = tempfile.mkdtemp(prefix="mastra-bench-")
        self.lag_file = Path(self.tmp) / "lag.txt"

    def start(self) -> dict[str, str]:
        from bench.http_api import MastraServer

        if (self.directory / "node_modules").exists():
            shutil.copyfile(ROOT / "bench" / self.script, self.directory / f".bench-{self.script}")
        self.server = MastraServer(self.directory, f".bench-{self.script}", stderr=Path(self.tmp) / "node.err", env={
            "BENCH_MODEL_URL": f"http://127.0.0.1:{self.mock_port}/v1", "BENCH_LAG_FILE": str(self.lag_file)})
        headers = self.server.start()
        self.port, self.proc = self.server.port, self.server.proc
        return headers

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        (self.directory / f".bench-{self.script}").unlink(missing_ok=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


def measure_server(server, lag_file: Path, mock_port: int, args) -> list[dict]:
    """Start ``server``, warm it up, measure ``--repeat`` times; one result per repetition."""
    from bench.http_api import rss_mb

    lines = []
    try:
        headers = server.start()
        print(f"{server.name} pid {server.proc.pid}, mock pid {args.mock_pid}", file=sys.stderr, flush=True)
        if args.warmup:  # the first runs import the SDK and open connections: not measured
            asyncio.run(measure(server, headers, args, mock_port, lag_file, args.warmup))
        for _ in range(args.repeat):
            for samples in (lag_file, collections_file(lag_file)):
                if samples.exists():
                    samples.unlink()
            result = asyncio.run(measure(server, headers, args, mock_port, lag_file, args.runs))
            rss, peak = rss_mb(server.proc.pid)
            line = {"server": server.name, "case": "concurrency", "database": getattr(server, "database", "libsql"),
                    "delay_ms": args.delay_ms, **result, "rss_mb": rss, "max_rss_mb": peak}
            print(json.dumps(line), flush=True)
            lines.append(line)
    finally:
        server.stop()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--delay-ms", type=float, default=300)
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for every finish")
    parser.add_argument("--warmup", type=int, default=5, help="runs made (and not measured) before the first measurement")
    parser.add_argument("--repeat", type=int, default=1, help="measurements in a row on the same server")
    parser.add_argument("--servers", default="django,mastra")
    parser.add_argument("--mastra-dir", type=Path, default=ROOT.parent / "shared" / "reference" / "mastra")
    parser.add_argument("--floor", type=int, default=20,
                        help="three-step conversations per client measuring the gap without a framework (0: none)")
    args = parser.parse_args()
    # run as a script, bench/ is sys.path[0]: the project's root must come first (bench.http_api)
    sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    from bench.http_api import DjangoServer, free_port
    from bench.machine import print_machine

    print_machine()

    mock_port = free_port()
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    mock = context.Process(target=serve_mock, args=(mock_port, args.delay_ms / 1000, ready), daemon=True)
    mock.start()
    args.mock_pid = mock.pid
    ready.wait(30)
    deadline = time.monotonic() + 30
    while True:  # run_app binds after the event is set
        try:
            socket.create_connection(("127.0.0.1", mock_port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)

    results: dict[str, list[dict]] = {}
    try:
        for client in ("aiohttp", "openai-sdk") if args.floor else ():
            print(json.dumps({**asyncio.run(measure_floor(mock_port, client, args.floor)),
                              "delay_ms": args.delay_ms}), flush=True)
        for name in args.servers.split(","):
            if name == "django":
                server = DjangoServer()
                lag_file = Path(server.tmp) / "lag.txt"
                server.env.update({
                    "MASTRA": "bench.concurrency:mastra", "OPENAI_BASE_URL": f"http://127.0.0.1:{mock_port}/v1",
                    "OPENAI_API_KEY": "bench", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
                    "MASTRA_API_SEND_RATE": "100000000/min", "MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE": "0",
                    "MASTRA_MAX_ACTIVE_RUNS_PER_AGENT": "0", "BENCH_LAG_FILE": str(lag_file)})
                server.database = "sqlite" if server.env["DATABASE_URL"].startswith("sqlite") else "postgresql"
            else:
                server = MastraConcurrencyServer(args.mastra_dir, mock_port)
                lag_file = server.lag_file
            results[name] = measure_server(server, lag_file, mock_port, args)
    finally:
        mock.terminate()
        mock.join(5)
    if {"django", "mastra"} <= set(results):
        for ours, theirs in zip(results["django"], results["mastra"]):
            print(json.dumps({"case": "concurrency", "ratio": "django/mastra",
                              **{key: [ours[key], theirs[key]] for key in (
                                  "completed", "framework_p50_ms", "framework_p99_ms", "wake_p50_ms", "tail_p50_ms",
                                  "run_p50_ms", "lag_p99_ms", "cpu_ms_per_run", "max_rss_mb")}}), flush=True)


if __name__ == "__main__":
    main()
