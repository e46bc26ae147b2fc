"""Two dispatcher processes racing over the same due records on PostgreSQL: every record is
delivered exactly once (claims are compare-and-set)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from agents.models import Thread, ThreadInput
from inbox.models import NotificationRecord, new_record_id

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]

DISPATCHER = textwrap.dedent("""
    import asyncio, json, os, sys, time
    from datetime import datetime
    os.environ["DJANGO_SETTINGS_MODULE"] = "mastra_site.settings"
    import django
    django.setup()
    from agents.memory import Memory
    from agents.runtime import Agent
    from agents.runtime.testing import drain_thread_runtime
    from agents.runtime.threads import get_thread_runtime
    from inbox.dispatcher import dispatch_due_notifications, dispatch_result_json

    agent = Agent(id="support", instructions="x", model="local/echo", memory=Memory())
    start_at = float(sys.argv[1])

    async def main():
        await asyncio.sleep(max(0.0, start_at - time.time()))  # both processes start together
        stats = await dispatch_due_notifications(now=datetime.fromisoformat(sys.argv[2]), batch_size=10,
                                                 agent_lookup=lambda agent_id: agent)
        await drain_thread_runtime(get_thread_runtime(), timeout=60)
        print(json.dumps(dispatch_result_json(stats)))

    asyncio.run(main())
""")


def test_two_dispatchers_never_deliver_a_record_twice(postgres_db, tmp_path):
    now = timezone.now()
    records = []
    for t in range(20):
        for i in range(6):
            priority = ("urgent", "high", "medium")[i % 3]
            records.append(NotificationRecord(
                id=new_record_id(), agent_id="support", resource_id="u1", thread_id=f"u1\x1frace-{t}", source="github",
                kind="ci-status", priority=priority, priority_rank={"medium": 1, "high": 2, "urgent": 3}[priority],
                summary=f"event {t}-{i}", deliver_at=now - timedelta(seconds=1), next_due_at=now - timedelta(seconds=1),
                created_at=now, updated_at=now))
    Thread.objects.bulk_create([Thread(thread_id=f"race-{t}", resource_id="u1") for t in range(20)])
    NotificationRecord.objects.bulk_create(records)
    script = tmp_path / "dispatch.py"
    script.write_text(DISPATCHER)
    env = {**os.environ, "DATABASE_URL": postgres_db, "MASTRA_NOTIFICATION_SCHEDULER": "0", "PYTHONPATH": str(ROOT)}
    start_at = str(time.time() + 2.0)
    procs = []
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, str(script), start_at, now.isoformat()], cwd=ROOT, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:  # a failed or timed-out run must not leave a dispatcher holding the test database
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
    stats = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    print(stats)
    assert sum(s["counts"]["delivered"] for s in stats) == len(records)
    assert sum(len(s["delivered"]) for s in stats) == len(records)
    assert all(s["counts"]["errors"] == 0 and s["failed"] == [] for s in stats)
    # each record reached its thread exactly once, as the signal the record names
    carried = Counter(i.signal["attributes"]["id"] for i in ThreadInput.objects.all()
                      if i.signal.get("tagName") == "notification")
    assert carried == Counter({r.id: 1 for r in records})
    for record in NotificationRecord.objects.all():
        assert record.status == "delivered" and record.lock_token == ""
        assert ThreadInput.objects.get(input_id=record.delivered_signal_id).signal["attributes"]["id"] == record.id
