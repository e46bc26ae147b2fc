"""A flood of refused webhook requests: what it costs per request and what it stores.

    .venv/bin/python bench/webhook_refusals.py [--n 2000]

Cases (N sequential requests each through ``inbox.webhooks.receive.webhook_receive``, the view's
one service call, on a GitHub endpoint):
  ping            signed ``ping`` deliveries (the baseline: nothing refused, nothing stored)
  bad_signature   the same body under a wrong signature (401, counted on the minute's row)
  unknown_names   a random endpoint name per request (404, counted on one row per minute)

Prints one JSON line per case: case, n, median_ms, p95_ms, per_s, and refusal_rows / refused_requests
(what the refusals table holds after the case: the requests of the last ``MASTRA_WEBHOOK_REFUSAL_WRITE_MS``
are still held by the process, ``inbox.webhooks.refusals``). Django is set up as in ``bench/agent_overhead.py``
(a temporary SQLite file unless ``DATABASE_URL`` is set).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

BENCH = Path(__file__).resolve().parent
# this directory's channels.py would hide the channels package: import the benches as a package
sys.path = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
sys.path.insert(0, str(BENCH.parent))

from bench.agent_overhead import setup_django  # noqa: E402

SECRET = "bench-secret"
BODY = b'{"zen": "Half measures are as bad as nothing at all."}'


async def measure(name: str, call, n: int) -> dict:
    times = []
    for index in range(n):
        start = time.perf_counter()
        await call(index)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"case": name, "n": n, "median_ms": round(statistics.median(times), 3),
            "p95_ms": round(times[int(len(times) * 0.95) - 1], 3), "per_s": round(1000 / statistics.mean(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    setup_django()
    from asgiref.sync import sync_to_async
    from django.db.models import Sum

    from agents.runtime.errors import MastraError
    from inbox.models import WebhookEndpoint, WebhookRefusal
    from inbox.webhooks.receive import webhook_receive

    WebhookRefusal.objects.all().delete()
    WebhookEndpoint.objects.update_or_create(name="bench", defaults=dict(
        source="github", secret=SECRET, agent_id="ops-assistant", resource_id="bench"))
    good = "sha256=" + hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()

    def headers(index: int, signature: str) -> dict:
        return {"X-GitHub-Event": "ping", "X-GitHub-Delivery": f"d-{index}", "X-Hub-Signature-256": signature,
                "Content-Type": "application/json"}

    async def post(name: str, index: int, signature: str) -> None:
        try:
            await webhook_receive(source="github", name=name, headers=headers(index, signature), raw=BODY)
        except MastraError:
            pass

    cases = {
        "ping": lambda i: post("bench", i, good),
        "bad_signature": lambda i: post("bench", i, "sha256=" + "0" * 64),
        "unknown_names": lambda i: post(uuid.uuid4().hex, i, good),
    }

    def stored() -> tuple[int, int]:
        return WebhookRefusal.objects.count(), WebhookRefusal.objects.aggregate(n=Sum("count"))["n"] or 0

    for name, call in cases.items():
        line = asyncio.run(measure(name, call, args.n))
        rows, requests = asyncio.run(sync_to_async(stored)())
        print(json.dumps({**line, "refusal_rows": rows, "refused_requests": requests}), flush=True)


if __name__ == "__main__":
    main()
