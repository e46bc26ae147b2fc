"""Group commit of ``send_notification_signal``: concurrent calls of one event loop share one
worker-thread hop and one transaction (``inbox.store``, ``inbox.services.notifications_ingest_batch``)
and still behave as if they had been made one after the other, thread by thread."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import inbox.services
import inbox.store
from agents.models import Thread, ThreadLease
from agents.runtime.errors import NotificationError, SignalError
from agents.runtime.threads import thread_key
from inbox.models import NotificationRecord, new_record_id
from inbox.services import notifications_ingest_batch

THREADS = ("t1", "t2", "t3", "t4")


def script(thread: str) -> list[dict]:
    """Eight notifications for one thread; what each does depends on what the ones before did."""
    base = {"source": "github", "kind": "ci", "summary": f"CI on {thread}"}
    return [
        {**base, "dedupe_key": "a", "priority": "low"},                 # new record A (persist)
        {**base, "dedupe_key": "a", "priority": "low"},                 # into A
        {**base, "dedupe_key": "b", "priority": "urgent"},              # new record B, delivered
        {**base, "dedupe_key": "b", "priority": "low"},                 # B is delivered: new record C
        {**base, "dedupe_key": "a", "priority": "medium"},              # into A, summarised now
        {**base, "dedupe_key": "a", "priority": "low"},                 # into A (its summary was sent)
        {**base, "kind": "noise", "coalesce_key": "n", "priority": "low"},  # new record N
        {**base, "kind": "noise", "coalesce_key": "n", "priority": "low"},  # into N, unless N was discarded
    ]


POLICY = {"priorities": {"urgent": "deliver", "medium": "summarize"}, "default": "persist"}
POLICIES = {
    "rules": POLICY,  # decided inside the ingest transaction
    "decide": {**POLICY, "decide": lambda ctx: "discard" if ctx["record"]["kind"] == "noise" else None},  # on the loop
}


def outcome(results: list) -> list[tuple]:
    """Per call: which record (by order of first appearance), coalesced, the decision, the record's
    status and count; ids and times differ between runs, the shape must not."""
    order: dict[str, int] = {}
    return [(order.setdefault(r.record["id"], len(order)), r.record["coalesced"], r.decision.action,
             r.decision.level, r.record["status"], r.record["coalesced_count"], r.error) for r in results]


async def stored(resource_id: str, thread_id: str) -> list[tuple]:
    rows = NotificationRecord.objects.filter(resource_id=resource_id, thread__thread_id=thread_id).order_by(
        "created_at", "kind", "dedupe_key", "status")
    return sorted([(r.kind, r.dedupe_key, r.coalesce_key, r.status, r.coalesced_count, r.lock_token,
                    r.summary_signal_id is not None, r.delivered_signal_id is not None) async for r in rows])


@pytest.fixture
def batches(monkeypatch):
    """The group commits made, as (ingest calls, update jobs) per batch."""
    seen: list[tuple[int, int]] = []
    commit = inbox.store._group_commit

    async def counted(*, ingests, updates):
        seen.append((len(ingests), len(updates)))
        return await commit(ingests=ingests, updates=updates)

    monkeypatch.setattr(inbox.store, "_group_commit", counted)
    return seen


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize("policy", list(POLICIES), ids=list(POLICIES))
async def test_concurrent_calls_give_what_sequential_calls_give(make_agent, settle, batches, policy):
    agent = make_agent(policy=POLICIES[policy])
    sequential = {}
    for thread in THREADS:
        sequential[thread] = [await agent.send_notification_signal(n, resource_id="seq", thread_id=f"seq-{thread}")
                              for n in script(thread)]
    await settle()
    batches.clear()

    # 32 concurrent calls: 4 threads × 8, each thread's calls in order
    calls = [(thread, n) for thread in THREADS for n in script(thread)]
    results = await asyncio.gather(*(agent.send_notification_signal(n, resource_id="conc", thread_id=f"conc-{thread}")
                                     for thread, n in calls))
    await settle()
    concurrent = {thread: [r for (t, _), r in zip(calls, results) if t == thread] for thread in THREADS}

    for thread in THREADS:
        assert outcome(concurrent[thread]) == outcome(sequential[thread])
        assert await stored("conc", f"conc-{thread}") == await stored("seq", f"seq-{thread}")
    expected_records = 4 if policy == "rules" else 5  # a discarded record is not coalesced into
    assert await NotificationRecord.objects.filter(resource_id="conc").acount() == 4 * expected_records
    assert await NotificationRecord.objects.exclude(lock_token="").acount() == 0
    # the first calls of the four threads shared one transaction
    assert batches[0][0] == 4
    assert len([b for b in batches if b[0]]) < len(calls)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_twenty_concurrent_calls_over_four_threads_count_like_sequential_ones(make_agent, batches):
    agent = make_agent(policy={"default": {"action": "summarize", "summary_at": timedelta(minutes=30)}})

    def notification(i: int) -> dict:
        return {"source": "github", "kind": "event", "summary": f"event {i}", "dedupe_key": f"k{i // 2}"}

    seq = [await agent.send_notification_signal(notification(i), resource_id="seq", thread_id=f"seq-{i % 4}")
           for i in range(20)]
    batches.clear()
    conc = await asyncio.gather(*(agent.send_notification_signal(notification(i), resource_id="conc",
                                                                  thread_id=f"conc-{i % 4}") for i in range(20)))
    assert [r.record["coalesced"] for r in conc] == [r.record["coalesced"] for r in seq]
    assert [r.record["coalesced_count"] for r in conc] == [r.record["coalesced_count"] for r in seq]
    for resource_id in ("seq", "conc"):
        rows = NotificationRecord.objects.filter(resource_id=resource_id)
        assert await rows.acount() == 20  # dedupe keys k0..k9, never twice in the same thread
        assert await rows.filter(coalesced_count=1, lock_token="", next_due_at__isnull=False).acount() == 20
    # digests are decided in the ingest transaction: one hop per batch and no separate update
    assert sum(b[0] for b in batches) == 20 and len(batches) < 20
    assert all(updates == 0 for _, updates in batches)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_invalid_call_fails_alone(make_agent):
    agent = make_agent(policy={"default": "persist"})
    good = {"source": "github", "kind": "ci", "summary": "CI failed"}
    calls = [good, {**good, "priority": "critical"}, good, {**good, "summary": ""}, good]
    results = await asyncio.gather(*(agent.send_notification_signal(n, resource_id="u1", thread_id=f"t{i}")
                                     for i, n in enumerate(calls)), return_exceptions=True)
    assert isinstance(results[1], NotificationError) and results[1].code == "invalid_priority"
    assert isinstance(results[3], NotificationError) and results[3].code == "missing_summary"
    assert [r.record["status"] for i, r in enumerate(results) if i in (0, 2, 4)] == ["pending"] * 3
    assert await NotificationRecord.objects.acount() == 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_database_error_fails_only_the_call_that_causes_it(make_agent, monkeypatch):
    agent = make_agent(policy={"default": "persist"})
    insert = NotificationRecord.objects.insert_instances
    failures = []

    def broken(records):
        if any(r.summary == "poison" for r in records):
            failures.append(len(records))
            raise DatabaseError("disk full")
        return insert(records)

    monkeypatch.setattr(NotificationRecord.objects, "insert_instances", broken)
    n = {"source": "github", "kind": "ci", "summary": "CI failed"}
    calls = [n, {**n, "summary": "poison"}, n]
    results = await asyncio.gather(*(agent.send_notification_signal(c, resource_id="u1", thread_id=f"t{i}")
                                     for i, c in enumerate(calls)), return_exceptions=True)
    assert failures == [3, 1]  # the batch of three, then the poisoned call alone
    assert isinstance(results[1], DatabaseError) and str(results[1]) == "disk full"
    assert [results[0].record["status"], results[2].record["status"]] == ["pending", "pending"]
    assert sorted([r.thread_id async for r in NotificationRecord.objects.all()]) == ["u1\x1ft0", "u1\x1ft2"]
    after = await agent.send_notification_signal(n, resource_id="u1", thread_id="t1")
    assert after.record["status"] == "pending" and await NotificationRecord.objects.acount() == 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_nul_byte_or_an_over_long_id_is_refused_before_the_batch(make_agent):
    """On every database: the bad calls fail with a clear error before they are queued, the five
    valid calls made at the same time are stored."""
    agent = make_agent(policy={"default": "persist"})
    n = {"source": "github", "kind": "ci", "summary": "CI failed"}
    calls = [(n, "t0"), ({**n, "summary": "bad\x00byte"}, "t1"), (n, "t2"), ({**n, "payload": {"k": "\x00"}}, "t3"),
             (n, "t4"), (n, "x" * 256), (n, "t6"), (n, "t7")]
    results = await asyncio.gather(*(agent.send_notification_signal(c, resource_id="u1", thread_id=t)
                                     for c, t in calls), return_exceptions=True)
    refused = {i: (r.code, r.message) for i, r in enumerate(results) if isinstance(r, NotificationError)}
    assert refused == {1: ("invalid_notification", "summary must not contain a NUL character"),
                       3: ("invalid_notification", "payload must not contain a NUL character"),
                       5: ("invalid_target", "thread_id must be at most 255 characters without control characters")}
    assert sorted([r.thread_id async for r in NotificationRecord.objects.all()]) == ["u1\x1ft0", "u1\x1ft2", "u1\x1ft4", "u1\x1ft6", "u1\x1ft7"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_value_postgresql_refuses_fails_only_its_own_call(make_agent, postgres_db, monkeypatch):
    """A NUL byte gets past validation here on purpose (as a gap in validation would): PostgreSQL
    refuses the batch, and the calls written again one by one store every other notification."""
    import agents.runtime.notifications.send as send
    from agents.runtime.notifications.validation import validate_notification

    def without_nul_check(items):
        out = []
        for item in items:
            clean = validate_notification({**item, "summary": item["summary"].replace("\x00", "")})
            out.append({**clean, "summary": item["summary"]})
        return out

    monkeypatch.setattr(send, "validate_notifications", without_nul_check)
    agent = make_agent(policy={"default": "persist"})
    n = {"source": "github", "kind": "ci", "summary": "CI failed"}
    calls = [n, n, {**n, "summary": "bad\x00byte"}, n, n]
    results = await asyncio.gather(*(agent.send_notification_signal(c, resource_id="u1", thread_id=f"t{i}")
                                     for i, c in enumerate(calls)), return_exceptions=True)
    assert isinstance(results[2], DatabaseError), results[2]
    assert [results[i].record["status"] for i in (0, 1, 3, 4)] == ["pending"] * 4
    assert sorted([r.thread_id async for r in NotificationRecord.objects.all()]) == ["u1\x1ft0", "u1\x1ft1", "u1\x1ft3", "u1\x1ft4"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_call_made_from_decide_for_the_same_thread_does_not_wait_for_itself(make_agent):
    async def decide(ctx):
        if ctx["record"]["kind"] == "outer":
            inner = await ctx["agent"].send_notification_signal(
                {"source": "github", "kind": "inner", "summary": "from decide"}, resource_id="u1", thread_id="t1")
            assert inner.decision.action == "persist"
            return "persist"
        return None

    agent = make_agent(policy={"decide": decide, "default": "persist"})
    result = await asyncio.wait_for(agent.send_notification_signal(
        {"source": "github", "kind": "outer", "summary": "outer"}, resource_id="u1", thread_id="t1"), timeout=10)
    assert result.decision.level == "decide"
    assert await NotificationRecord.objects.filter(lock_token="").acount() == 2


# -- the sync function: statements per batch ---------------------------------------------------
def notification(**extra) -> dict:
    return {"source": "github", "kind": "ci", "priority": "medium", "summary": "CI failed", "payload": None,
            "dedupe_key": None, "coalesce_key": None, "source_id": None, "attributes": {}, "metadata": {}, **extra}


def settle_all(records: list[dict], state: dict | None) -> dict:
    """A plan that releases every record, noting whether the thread was active."""
    reason = "active" if state and state.get("active_run_id") else "idle"
    return {"updates": [{"id": r["id"], "lock_token": "", "locked_until": None, "delivery_reason": reason}
                        for r in records], "seen": len(records)}


@pytest.mark.django_db
@pytest.mark.parametrize("calls", [3, 60])
def test_one_batch_is_five_statements_whatever_the_number_of_calls(calls):
    now = timezone.now()
    Thread.objects.bulk_create([Thread(thread_id=f"t{i}", resource_id="u1") for i in range(calls)])
    existing = NotificationRecord.objects.create(
        id=new_record_id(), agent_id="a", resource_id="u1", thread_id="u1\x1ft0", source="github", kind="ci",
        summary="old", dedupe_key="k0", created_at=now - timedelta(minutes=1), updated_at=now)
    ThreadLease.objects.create(thread_id="u1\x1ft1", owner_run_id="run-1", status="running", expires_at=now + timedelta(minutes=1))
    batch = []
    for i in range(calls):
        thread_id = f"t{i}"
        notifications = [notification(dedupe_key=f"k{i}"), notification(summary="no key")]
        batch.append({"agent_id": "a", "resource_id": "u1", "thread_id": thread_id, "notifications": notifications,
                      "token": f"tok{i}", "locked_until": now + timedelta(seconds=60), "now": now,
                      "thread_key": thread_key("u1", thread_id), "plan": settle_all})
    with CaptureQueriesContext(connection) as queries:
        outcomes = notifications_ingest_batch(calls=batch)
    # Django logs an executemany as "<n> times: <sql>"
    statements = [q["sql"].split(" times: ", 1)[-1].split()[0].upper() for q in queries.captured_queries]
    # threads, candidates, leases, new rows, coalesced rows
    assert statements == ["SELECT", "SELECT", "SELECT", "INSERT", "UPDATE"]
    assert queries.captured_queries[3]["sql"].startswith(f"{2 * calls - 1} times: INSERT")

    assert [o["records"][0]["coalesced"] for o in outcomes] == [True] + [False] * (calls - 1)
    assert outcomes[0]["records"][0]["id"] == existing.id
    assert outcomes[0]["records"][0]["coalesced_count"] == 2
    assert outcomes[1]["thread"]["active_run_id"] == "run-1" and outcomes[0]["thread"] is None
    assert [o["planned"]["seen"] for o in outcomes] == [2] * calls
    assert NotificationRecord.objects.count() == 2 * calls
    assert NotificationRecord.objects.exclude(lock_token="").count() == 0  # the plans' updates were written
    assert set(NotificationRecord.objects.filter(thread__thread_id="t1").values_list("delivery_reason", flat=True)) == {
        "active"}
    existing.refresh_from_db()
    assert (existing.coalesced_count, existing.summary, existing.delivery_reason) == (2, "CI failed", "idle")


@pytest.mark.django_db
def test_a_batch_sees_what_its_earlier_calls_left():
    """Calls of one batch for the same thread: a record an earlier call released is coalesced into,
    one it still claims (it is emitting it) is not."""
    now = timezone.now()

    def call(token: str, plan) -> dict:
        return {"agent_id": "a", "resource_id": "u1", "thread_id": "t1", "token": token, "now": now,
                "notifications": [notification(dedupe_key="k")], "locked_until": now + timedelta(seconds=60),
                "thread_key": thread_key("u1", "t1"), "plan": plan}

    keep_claim = lambda records, state: {"updates": []}  # noqa: E731
    first, second, third = notifications_ingest_batch(
        calls=[call("tok1", settle_all), call("tok2", keep_claim), call("tok3", settle_all)])
    assert second["records"][0]["id"] == first["records"][0]["id"]
    assert second["records"][0]["coalesced_count"] == 2
    assert third["records"][0]["id"] != first["records"][0]["id"]  # still claimed by the second call
    assert NotificationRecord.objects.get(pk=first["records"][0]["id"]).lock_token == "tok2"


@pytest.mark.django_db
def test_a_failing_plan_leaves_its_call_undecided_and_the_others_planned():
    now = timezone.now()

    def broken(records, state):
        raise RuntimeError("bug")

    calls = [{"agent_id": "a", "resource_id": "u1", "thread_id": f"t{i}", "token": f"tok{i}", "now": now,
              "notifications": [notification()], "locked_until": now + timedelta(seconds=60),
              "thread_key": thread_key("u1", f"t{i}"), "plan": plan} for i, plan in enumerate([broken, settle_all])]
    failed, planned = notifications_ingest_batch(calls=calls)
    assert "planned" not in failed and planned["planned"]["seen"] == 1
    assert NotificationRecord.objects.get(pk=failed["records"][0]["id"]).lock_token == "tok0"
    assert NotificationRecord.objects.get(pk=planned["records"][0]["id"]).lock_token == ""


@pytest.mark.django_db
def test_one_call_with_two_dedupe_keys_gives_two_records():
    now = timezone.now()
    call = {"agent_id": "a", "resource_id": "u1", "thread_id": "t1", "token": "tok", "now": now,
            "locked_until": now + timedelta(seconds=60),
            "notifications": [notification(dedupe_key="a", summary="first"), notification(dedupe_key="b", summary="second")]}
    [outcome] = notifications_ingest_batch(calls=[call])
    assert [(r["dedupe_key"], r["summary"], r["coalesced"], r["coalesced_count"]) for r in outcome["records"]] == [
        ("a", "first", False, 1), ("b", "second", False, 1)]
    assert sorted(NotificationRecord.objects.values_list("dedupe_key", "thread__resource_id")) == [
        ("a", "u1"), ("b", "u1")]


@pytest.mark.django_db(transaction=True)
def test_a_notification_goes_to_its_own_resources_thread_of_that_id():
    other = Thread.objects.create(thread_id="t1", resource_id="someone-else")
    now = timezone.now()
    call = {"agent_id": "a", "resource_id": "u1", "thread_id": "t1", "token": "tok", "now": now,
            "locked_until": now + timedelta(seconds=60), "notifications": [notification()]}
    notifications_ingest_batch(calls=[call])
    [record] = NotificationRecord.objects.all()
    assert (record.resource_id, record.thread_id) == ("u1", "u1\x1ft1")
    assert not other.notifications.exists()
