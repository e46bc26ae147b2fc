"""Channels under load: Slack mentions each sent as ``app_mention`` + ``message`` + 2 retries, spread
over two daphne processes, and GitHub mentions, answered through the fake platforms.

    .venv/bin/python bench/channel_replies.py [--database-url postgres://postgres@127.0.0.1:5432/postgres]
        [--redis-url redis://127.0.0.1:6379/0] [--mentions 1000] [--github 200] [--clients 16]
        [--layout inline|worker]

The layout of deploy/Procfile: two daphne (``mastra_site.asgi:application``) and a worker process
(``manage.py run_workers``) on a PostgreSQL database of the bench's own (created, migrated, dropped
at the end) and Redis (keys under a prefix of their own, deleted at the end). ``--layout inline``
(the default): each daphne starts the runs of the events it receives and also runs the channels'
work; ``--layout worker``: the daphnes only acknowledge (``MASTRA_CHANNELS_HANDOFF_INLINE`` and
``MASTRA_CHANNELS_SCHEDULER`` off) and the worker process hands off, runs and sends. The site's demo agent
(``ops-assistant``, ``local/echo``) gets both adapters from the environment, pointed at a fake Slack
Web API and a fake GitHub REST API (``agent_channels.fakes``) served by this process. Every process
runs the channels' work every ``MASTRA_CHANNELS_POLL_MS`` (200 here); the GitHub write spacing per
installation is off (``MASTRA_CHANNELS_GITHUB_WRITE_INTERVAL_MS=0``: at the default 1 s the 200
comments would take minutes by design).

Each Slack mention is its own top-level message in one of 20 channels; its four requests (the
mention, its ``message`` copy, two ``X-Slack-Retry-Num`` retries of the mention) go in a random order
to either process, ``--clients`` requests at a time. Printed (one JSON line per case):

  slack   replies posted (one per mention expected), duplicates (answers beyond one per mention),
          acknowledgement latency p50 / p99 / max over all requests, Slack Web API calls per answer
          (``chat.postMessage`` + ``chat.update`` + look-ups), and the seconds until the last answer.
  github  comments created (one per mention), edits per comment, 👀 reactions, ack p50 / p99.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.http_api import free_port, percentile  # noqa: E402
from bench.sizing import admin_sql, database_url_named, machine  # noqa: E402

SLACK_SECRET, GITHUB_SECRET = "bench-slack-secret", "bench-github-secret"
CHANNELS = 20


class Site:
    """The bench's database, the fakes' URLs in the processes' environment, and the processes."""

    def __init__(self, args, slack_url: str, github_url: str) -> None:
        self.admin_url = args.database_url
        self.name = f"mastra_channels_{os.getpid()}"
        self.prefix = f"bench-channels-{os.getpid()}"
        self.redis_url = args.redis_url
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-channels-"))
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
        self.env.update({
            "DATABASE_URL": database_url_named(self.admin_url, self.name), "REDIS_URL": self.redis_url,
            "MASTRA_CHANNEL_PREFIX": self.prefix, "PYTHONPATH": str(ROOT), "WEB_CONCURRENCY": "2",
            "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1",
            "SECRET_KEY": uuid.uuid4().hex * 2, "LOG_LEVEL": "WARNING", "MASTRA_DEFAULT_MODEL": "local/echo",
            "MASTRA_NOTIFICATION_DISPATCH_INTERVAL_S": "3600", "MASTRA_CHANNELS_POLL_MS": "200",
            "MASTRA_CHANNELS_GITHUB_WRITE_INTERVAL_MS": "0",
            "SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": SLACK_SECRET, "SLACK_API_URL": slack_url,
            "GITHUB_WEBHOOK_SECRET": GITHUB_SECRET, "GITHUB_TOKEN": "ghp_bench", "GITHUB_BOT_LOGIN": "ops-bot",
            "GITHUB_API_URL": github_url})
        self.procs: list[subprocess.Popen] = []

    def create(self) -> None:
        admin_sql(self.admin_url, f'CREATE DATABASE "{self.name}"')
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=self.env,
                       check=True)

    def start(self, command: list[str], log: str, env: dict | None = None) -> subprocess.Popen:
        with open(self.workdir / log, "wb") as handle:
            proc = subprocess.Popen(command, cwd=ROOT, env={**self.env, **(env or {})}, stdout=handle,
                                    stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def daphne(self, env: dict | None = None) -> int:
        port = free_port()
        self.start([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                    "mastra_site.asgi:application"], f"daphne-{port}.log", env)
        return port

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def drop(self) -> None:
        admin_sql(self.admin_url, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        import redis

        client = redis.Redis.from_url(self.redis_url)
        for key in client.scan_iter(match=f"*{self.prefix}*", count=1000):
            client.delete(key)

    def count(self, sql: str) -> int:
        import psycopg

        url = self.env["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
        with psycopg.connect(url) as connection:
            return connection.execute(sql).fetchone()[0]


async def listening(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on {port}") from None
            await asyncio.sleep(0.2)


def slack_request(payload: dict) -> tuple[bytes, dict]:
    body = json.dumps(payload).encode()
    ts = str(int(time.time()))
    signature = "v0=" + hmac.new(SLACK_SECRET.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return body, {"Content-Type": "application/json", "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}


def slack_copies(n: int) -> list:
    """The four requests of mention ``n`` (the mention, its message copy, two retries), each a
    function that signs it when it is sent (Slack's timestamp must be fresh)."""
    channel, ts = f"C{n % CHANNELS}", f"{1700000000 + n}.000100"
    mention = {"type": "app_mention", "user": f"U{n % 50}", "text": f"<@UBOT> question {n}", "ts": ts,
               "channel": channel}
    copy = {**mention, "type": "message", "channel_type": "channel"}

    def envelope(event, event_id):
        return {"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": event_id, "event": event}

    def signed(event, event_id, retry=None):
        def make():
            body, headers = slack_request(envelope(event, event_id))
            if retry:
                headers = {**headers, "X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
            return body, headers
        return make

    return [signed(mention, f"Ev{n}m"), signed(copy, f"Ev{n}c"), signed(mention, f"Ev{n}m", 1),
            signed(mention, f"Ev{n}m", 2)]


def github_request(n: int):
    payload = {"action": "created", "installation": {"id": 42}, "repository": {"full_name": "octo/repo"},
               "issue": {"number": 1000 + n}, "sender": {"login": "octocat"},
               "comment": {"id": 50_000 + n, "body": f"@ops-bot look at issue {n}", "author_association": "MEMBER",
                           "user": {"login": "octocat", "type": "User"}, "html_url": ""}}
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
               "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": signature}
    return lambda: (body, headers)


async def warm(ports: list[int], path: str) -> None:
    """One handshake and one message outside any thread (a read, nothing stored) per process: the
    imports, the verifier and the database connections are ready before the clock starts."""
    def envelope(event, event_id):
        return {"type": "event_callback", "team_id": "T1", "event_id": event_id, "event": event}

    for port in ports:
        stray = {"type": "message", "user": "U1", "text": "warm", "ts": "1.1", "thread_ts": "1.0", "channel": "CW",
                 "channel_type": "channel"}
        requests = [(path.format("slack"), lambda: slack_request({"type": "url_verification", "challenge": "x"})),
                    (path.format("slack"), lambda: slack_request(envelope(stray, f"warm{port}")))]
        await post_all([port], requests * 3, 1)


async def post_all(ports: list[int], requests: list, clients: int) -> list[float]:
    """POST every request (path, a function giving its body and headers) to a random process; the
    latencies (ms) of the acks."""
    import aiohttp

    latencies, queue = [], asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as session:
        async def client() -> None:
            while not queue.empty():
                path, make = queue.get_nowait()
                body, headers = make()
                start = time.perf_counter()
                async with session.post(f"http://127.0.0.1:{random.choice(ports)}{path}", data=body,
                                        headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"{path}: HTTP {response.status}")
                latencies.append((time.perf_counter() - start) * 1000)

        await asyncio.gather(*(client() for _ in range(clients)))
    return latencies


async def settled(site: Site, expected: int, posted, timeout: float) -> float:
    """Seconds until ``posted()`` reaches ``expected`` and no outbox row is pending."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if posted() >= expected and site.count(
                "select count(*) from agent_channels_outboxmessage where status = 'pending'") == 0:
            return time.monotonic() - start
        await asyncio.sleep(0.5)
    raise RuntimeError(f"{posted()} of {expected} answers after {timeout} s")


async def run(args) -> None:
    from agent_channels.fakes import FakeGitHub, FakeSlack

    slack, github = FakeSlack(users={f"U{i}": f"User {i}" for i in range(50)}), FakeGitHub()
    await slack.start()
    await github.start()
    site = Site(args, slack.api_url, github.url)
    site.create()
    try:
        # inline: each daphne starts the runs of the events it receives and runs the channels' work;
        # worker: the daphnes only acknowledge, the worker process hands off, runs and sends
        serving = {} if args.layout == "inline" else {"MASTRA_CHANNELS_HANDOFF_INLINE": "false",
                                                      "MASTRA_CHANNELS_SCHEDULER": "false"}
        ports = [site.daphne(serving), site.daphne(serving)]
        site.start([sys.executable, "manage.py", "run_workers"], "workers.log")
        for port in ports:
            await listening(port)
        path = "/api/agents/ops-assistant/channels/{}/webhook"
        await warm(ports, path)
        requests = [(path.format("slack"), make) for n in range(args.mentions) for make in slack_copies(n)]
        random.shuffle(requests)
        start = time.monotonic()
        acks = await post_all(ports, requests, args.clients)
        wait = await settled(site, args.mentions, lambda: len(slack.posted()), timeout=args.timeout)
        posted = slack.posted()
        answered = {(m["thread_ts"]) for m in posted}
        calls = sum(slack.count(name) for name in ("chat.postMessage", "chat.update", "conversations.replies"))
        print(json.dumps({
            "case": "slack", "layout": args.layout, "processes": "2 daphne + run_workers", "database": "postgresql", "mentions": args.mentions,
            "requests": len(requests), "replies_posted": len(posted), "threads_answered": len(answered),
            "duplicates": len(posted) - len(answered), "ack_p50_ms": round(percentile(acks, 0.5), 1),
            "ack_p99_ms": round(percentile(acks, 0.99), 1), "ack_max_ms": round(max(acks), 1),
            "slack_calls_per_answer": round(calls / max(1, len(posted)), 2),
            "events_stored": site.count("select count(*) from agent_channels_channelevent"),
            "seconds_to_last_answer": round(time.monotonic() - start, 1), "seconds_after_last_ack": round(wait, 1),
        }), flush=True)
        requests = [(path.format("github"), github_request(n)) for n in range(args.github)]
        start = time.monotonic()
        acks = await post_all(ports, requests, args.clients)
        created = lambda: github.count("create_comment")  # noqa: E731
        await settled(site, args.github, created, timeout=args.timeout)
        comments = sum(len(c) for c in github.comments.values())
        print(json.dumps({
            "case": "github", "layout": args.layout, "mentions": args.github, "comments_created": github.count("create_comment"),
            "comments_on_issues": comments, "edits_per_comment": round(github.count("update_comment") / max(1, comments), 2),
            "reactions": len(github.reactions), "ack_p50_ms": round(percentile(acks, 0.5), 1),
            "ack_p99_ms": round(percentile(acks, 0.99), 1), "seconds": round(time.monotonic() - start, 1),
        }), flush=True)
    finally:
        site.stop()
        site.drop()
        await slack.stop()
        await github.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL",
                                                                 "postgres://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--mentions", type=int, default=1000)
    parser.add_argument("--github", type=int, default=200)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--layout", choices=("inline", "worker"), default="inline")
    args = parser.parse_args()
    print(json.dumps(machine()), flush=True)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
