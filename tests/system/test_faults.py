"""The production layout under real faults (scenarios 1–6): two daphne processes, a Celery worker
and Celery beat from ``deploy/Procfile``, on PostgreSQL and a private Redis (``conftest.py``).

Every scenario prints its counts (``layout.report``: sent, accepted, delivered to the model,
answered, lost, duplicated, runs by final state) and ends by checking that the layout is in a clear
state: no run of its threads is ``running``, no input of theirs waits, and no process logged a 500.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter

import pytest

from tests.system.layout import Layout, await_until, http, is_final, report, rss_kb, seqs

pytestmark = pytest.mark.asyncio

SETTLE_S = 30.0


def new_thread(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def calls_of(site: Layout, thread_id: str) -> list[dict]:
    return [c for c in site.calls() if c["thread"] == thread_id]


def delivery_counts(site: Layout, thread_ids: list[str], texts: list[str]) -> dict:
    """How many times the model was given each input (``<thread>|<text>``): delivered, lost (never),
    duplicated (more than once)."""
    wanted = set(texts)
    seen = Counter(text for call in site.calls() if call["thread"] in thread_ids for text in call["new"]
                   if text in wanted)
    return {"delivered": sum(1 for t in texts if seen[t]), "lost": sum(1 for t in texts if not seen[t]),
            "duplicated": sum(1 for t in texts if seen[t] > 1)}


def duplicate_details(site: Layout, thread_ids: list[str], texts: list[str], limit: int = 5) -> list[dict]:
    """For a report: the first inputs the model was given more than once, each with those calls
    (process, time, the inputs they answered) and its thread's runs (id, status, error)."""
    wanted = set(texts)
    calls = [c for c in site.calls() if c["thread"] in thread_ids]
    seen = Counter(text for call in calls for text in call["new"] if text in wanted)
    details = []
    for text in [t for t in texts if seen[t] > 1][:limit]:
        thread = text.split("|", 1)[0]
        details.append({"input": text,
                        "calls": [{"pid": c["pid"], "t": round(c["t"], 3), "new": c["new"]}
                                  for c in calls if text in c["new"]],
                        "runs": site.database.query(
                            "SELECT r.id, r.status, r.error, r.started_at::text, r.finished_at::text "
                            "FROM agents_run r JOIN agents_thread t ON t.key = r.thread_id WHERE t.thread_id = %s "
                            "ORDER BY r.started_at", (thread,))})
    return details


async def settle(site: Layout, thread_ids: list[str], timeout: float = SETTLE_S) -> None:
    await await_until(lambda: site.settled(thread_ids), timeout,
                      f"every run of {len(thread_ids)} thread(s) to end and every input to be taken", interval=0.1)


def assert_clean(site: Layout, thread_ids: list[str]) -> None:
    """The clear state every scenario ends in."""
    runs = site.runs_by_status(thread_ids)
    inputs = site.inputs_by_status(thread_ids)
    assert "running" not in runs, runs
    assert set(inputs) <= {"consumed"}, inputs
    assert site.new_errors() == {}


# -- 1. a follow-up sent to the other process ---------------------------------------------------------
async def test_a_follow_up_sent_to_the_process_that_does_not_own_the_run_is_delivered_into_it(site):
    a, b = site.web
    thread = new_thread("follow-up")
    texts = [f"{thread}|slow:2 first", f"{thread}|follow-up"]
    status, wake = await site.send(a, thread, "slow:2 first")
    assert (status, wake["action"]) == (200, "wake"), wake
    await await_until(lambda: calls_of(site, thread), 15, "the first model call")
    status, follow = await site.send(b, thread, "follow-up")
    assert (status, follow["action"], follow["runId"]) == (200, "deliver", wake["runId"]), follow
    await settle(site, [thread])

    calls = calls_of(site, thread)
    assert [(c["pid"], c["new"]) for c in calls] == [(a.pid, [texts[0]]), (a.pid, [texts[1]])]
    assert site.runs(thread) == [(wake["runId"], "completed")]
    assert site.stored_user_texts(thread) == texts
    counts = delivery_counts(site, [thread], texts)
    report("1-follow-up-to-the-other-process", sent=2, accepted=2, **counts, answered=len(calls),
           runs=site.runs_by_status([thread]))
    assert counts == {"delivered": 2, "lost": 0, "duplicated": 0}
    assert_clean(site, [thread])


# -- 2. subscribers on the other process, then on the running one ------------------------------------
def assert_whole_story(site: Layout, thread: str, parts: list[list[dict]]) -> list[int]:
    """The chunks a subscriber read over its connections: each ``seq`` once, in order, and exactly
    the thread's event log (no gap, no duplicate)."""
    got = [seq for part in parts for seq in seqs(part)]
    logged = site.event_seqs(thread)
    assert got == sorted(set(got)), f"out of order or duplicated: {got}"
    assert got == logged, f"subscriber {got} != event log {logged}"
    return got


async def test_subscribers_on_the_other_process_follow_a_run_and_resume_on_the_running_one(site):
    a, b = site.web
    thread = new_thread("subscribers")
    sse, ws = await site.sse(b, thread).open(), await site.ws(b, thread).open()
    status, wake = await site.send(a, thread, "slow:3 stream")
    assert (status, wake["action"]) == (200, "wake"), wake

    def ten_deltas(subscriber):
        return lambda: sum(c["type"] == "text-delta" for c in subscriber.chunks) >= 10

    await await_until(ten_deltas(sse), 15, "ten text deltas over SSE on the other process")
    await await_until(ten_deltas(ws), 15, "ten text deltas over the websocket on the other process")
    await sse.close()
    await ws.close()
    first = {"sse": sse.chunks, "ws": ws.chunks}
    assert not any(is_final(c) for part in first.values() for c in part)  # mid-run
    assert [c["type"] for c in sse.chunks[:2]] == ["start", "data-user-message"]

    # reconnect to the process that runs the thread, from the last seq read
    sse2, ws2 = await site.sse(a, thread, sse.last_seq).open(), await site.ws(a, thread, ws.last_seq).open()
    assert ws2.snapshot["lastSeq"] == ws.last_seq
    await sse2.until(is_final, 20, "the run's finish over SSE")
    await ws2.until(is_final, 20, "the run's finish over the websocket")
    await settle(site, [thread])
    await sse2.close()
    await ws2.close()

    by_sse = assert_whole_story(site, thread, [sse.chunks, sse2.chunks])
    by_ws = assert_whole_story(site, thread, [ws.chunks, ws2.chunks])
    assert by_sse == by_ws
    assert [(c["seq"], c["type"]) for c in sse.chunks + sse2.chunks] == [
        (c["seq"], c["type"]) for c in ws.chunks + ws2.chunks]
    assert {c["runId"] for c in sse.chunks + sse2.chunks} == {wake["runId"]}
    calls = calls_of(site, thread)
    assert [c["pid"] for c in calls] == [a.pid]
    report("2-subscribers-across-processes", sent=1, accepted=1, **delivery_counts(site, [thread], [
        f"{thread}|slow:3 stream"]), answered=site.answered([thread]), runs=site.runs_by_status([thread]),
        chunks=len(by_sse), sse_before_reconnect=len(sse.chunks), ws_before_reconnect=len(ws.chunks))
    assert_clean(site, [thread])


# -- 3. kill -9 of the process running a thread ------------------------------------------------------
async def test_a_killed_owner_s_inputs_are_answered_by_the_other_process_once_each_in_order(site):
    a, b = site.web
    thread = new_thread("kill")
    texts = [f"{thread}|slow:3 first", f"{thread}|second", f"{thread}|third"]
    status, wake = await site.send(a, thread, "slow:3 first")
    assert (status, wake["action"]) == (200, "wake"), wake
    queued = [await site.send(b, thread, text, route="queue-message") for text in ("second", "third")]
    assert [(s, q["action"]) for s, q in queued] == [(200, "deliver")] * 2, queued
    assert len({wake["runId"], *(q["runId"] for _, q in queued)}) == 3
    await await_until(lambda: calls_of(site, thread), 15, "the first model call")
    killed = a.pid
    a.kill9()
    await settle(site, [thread], timeout=SETTLE_S)

    calls = [(c["pid"], c["new"]) for c in calls_of(site, thread)]
    assert calls[0] == (killed, [texts[0]])
    after = calls[1:]
    assert all(pid == b.pid for pid, _ in after), calls
    retried = [new for _, new in after if new == [texts[0]]]
    assert len(retried) <= 1, calls  # the cut input at most once more
    assert [new for _, new in after if new != [texts[0]]] == [[texts[1]], [texts[2]]], calls  # once each, in order
    runs = dict(site.runs(thread))
    assert runs.pop(wake["runId"]) == "failed"
    # the takeover run that answered the cut input once more, then one run per queued input
    assert sorted(runs.values()) == ["completed"] * (2 + len(retried))
    assert site.stored_user_texts(thread) == texts
    counts = delivery_counts(site, [thread], texts)
    report("3-kill-9-mid-run", sent=3, accepted=3, **counts, answered=site.answered([thread]),
           cut_input_answered_again=len(retried), runs=site.runs_by_status([thread]))
    assert counts == {"delivered": 3, "lost": 0, "duplicated": len(retried)}
    assert_clean(site, [thread])

    site.restart(a)  # the next scenarios have two processes again
    status, answer = await site.send(a, thread, "after the restart")
    assert (status, answer["action"]) == (200, "wake")
    await settle(site, [thread])
    assert calls_of(site, thread)[-1]["pid"] == a.pid
    assert_clean(site, [thread])


# -- 4. Redis restarted mid-stream -------------------------------------------------------------------
async def test_a_redis_restart_mid_stream_loses_no_chunk_and_no_input(site):
    a, b = site.web
    thread = new_thread("redis")
    sse, ws = await site.sse(b, thread).open(), await site.ws(b, thread).open()
    status, wake = await site.send(a, thread, "slow:4 first")
    assert (status, wake["action"]) == (200, "wake"), wake
    sent = [f"{thread}|slow:4 first"]
    await sse.until(lambda c: c["type"] == "text-delta", 15, "the first text delta over SSE")
    await ws.until(lambda c: c["type"] == "text-delta", 15, "the first text delta over the websocket")

    site.redis.stop()
    during = []
    for n, process in enumerate([a, b, a, b]):  # inputs accepted while Redis is down, into the run on A
        status, answer = await site.send(process, thread, f"during the outage {n}")
        during.append((status, answer.get("accepted")))
        sent.append(f"{thread}|during the outage {n}")
        await asyncio.sleep(0.3)
    assert during == [(200, True)] * 4, during
    site.redis.start()

    # the subscribers went on through the outage; they reconnect to the other process with their seq
    await sse.close()
    await ws.close()
    sse2, ws2 = await site.sse(a, thread, sse.last_seq).open(), await site.ws(a, thread, ws.last_seq).open()
    status, after = await site.send(b, thread, "after the outage")
    assert status == 200, after
    sent.append(f"{thread}|after the outage")
    await settle(site, [thread])
    last = site.event_seqs(thread)[-1]
    await sse2.until(lambda c: c.get("seq") == last, 15, "the thread's last chunk over SSE")
    await ws2.until(lambda c: c.get("seq") == last, 15, "the thread's last chunk over the websocket")
    await sse2.close()
    await ws2.close()

    by_sse = assert_whole_story(site, thread, [sse.chunks, sse2.chunks])
    assert by_sse == assert_whole_story(site, thread, [ws.chunks, ws2.chunks])
    counts = delivery_counts(site, [thread], sent)
    runs = site.runs_by_status([thread])
    report("4-redis-restart-mid-stream", sent=len(sent), accepted=len(sent), **counts,
           answered=site.answered([thread]), runs=runs, chunks=len(by_sse))
    assert counts == {"delivered": len(sent), "lost": 0, "duplicated": 0}
    assert set(runs) == {"completed"}
    assert site.answered([thread]) == len(sent)
    assert_clean(site, [thread])


# -- 5. PostgreSQL connections dropped ---------------------------------------------------------------
async def request_status(site: Layout, process, method: str, path: str, body: dict | None = None):
    return await http(method, process.port, path, body, headers=site.auth(), timeout=10)


async def test_requests_during_a_database_outage_get_503_and_the_site_recovers_without_a_restart(site):
    a, b = site.web
    thread = new_thread("pg")
    status, wake = await site.send(a, thread, "slow:2 before the outage")
    assert (status, wake["action"]) == (200, "wake"), wake
    await await_until(lambda: calls_of(site, thread), 15, "the first model call")

    stop = asyncio.Event()

    def outage() -> int:
        site.database.disallow_connections()
        terminated = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            terminated += site.database.terminate_backends()
            time.sleep(0.1)
        return terminated

    async def traffic() -> list[tuple[str, int, dict, dict]]:
        seen = []
        n = 0
        while not stop.is_set():
            for process in (a, b):
                n += 1
                for method, path, body in (
                        ("POST", "/api/agents/ops/send-message", {"message": f"{thread}|during {n}", "threadId": thread}),
                        ("GET", f"/api/memory/threads?agentId=ops", None),
                        ("GET", f"/api/agents/ops/threads/queue?threadId={thread}", None),
                        ("GET", "/readyz", None),
                        ("GET", "/healthz", None)):
                    status, headers, data = await request_status(site, process, method, path, body)
                    seen.append((path.split("?")[0], status, headers, json.loads(data) if data else {}))
            await asyncio.sleep(0.05)
        return seen

    outage_task = asyncio.ensure_future(asyncio.to_thread(outage))
    await asyncio.sleep(0.3)  # the outage has begun
    traffic_task = asyncio.ensure_future(traffic())
    terminated = await outage_task
    stop.set()
    seen = await traffic_task
    site.database.allow_connections()

    statuses = Counter((path, status) for path, status, _, _ in seen)
    api = [(status, headers, body) for path, status, headers, body in seen if path.startswith("/api/")]
    assert {status for status, _, _ in api} == {503}, statuses
    assert all(body["code"] == "database_unavailable" and headers.get("retry-after") == "1"
               for _, headers, body in api), api[:3]
    assert {status for path, status, _, _ in seen if path == "/readyz"} == {503}, statuses
    assert {status for path, status, _, _ in seen if path == "/healthz"} == {200}, statuses
    accepted_during = [body for path, status, _, body in seen if path.endswith("send-message") and status == 200]

    # recovered without a restart: ready, and a message answered on each process
    for process in (a, b):
        site.wait_ready(process, timeout=30)
    for process in (a, b):
        status, answer = await site.send(process, thread, f"after the outage on {process.name}")
        assert status == 200, answer
    await settle(site, [thread])
    texts = [f"{thread}|after the outage on {p.name}" for p in (a, b)]
    counts = delivery_counts(site, [thread], texts)
    runs = site.runs_by_status([thread])
    report("5-postgresql-outage", sent=sum(1 for path, *_ in seen if path.endswith("send-message")) + 3,
           accepted=len(accepted_during) + 3, refused_503=sum(1 for s, _, _ in api), backends_terminated=terminated,
           **counts, answered=site.answered([thread]), runs=runs,
           statuses={f"{path} {status}": n for (path, status), n in sorted(statuses.items())})
    assert counts == {"delivered": 2, "lost": 0, "duplicated": 0}
    # the run cut by the outage ended (completed, or failed and its input answered again)
    assert delivery_counts(site, [thread], [f"{thread}|slow:2 before the outage"])["delivered"] == 1
    assert_clean(site, [thread])


# -- 6. a bounded soak -------------------------------------------------------------------------------
SOAK_SENDS = 2000
SOAK_SECONDS = 60.0
SOAK_THREADS = 50
SOAK_IN_FLIGHT = 16
SOAK_SLOW_EVERY = 25


async def test_a_soak_of_two_thousand_sends_loses_nothing_and_memory_stays_flat(site):
    threads = [new_thread(f"soak{n}") for n in range(SOAK_THREADS)]
    results: list[tuple[int, dict] | None] = [None] * SOAK_SENDS

    def thread_of(i: int) -> str:  # sends go in pairs to a thread, one through each process
        return threads[(i // 2) % SOAK_THREADS]

    def text_of(i: int) -> str:  # every SOAK_SLOW_EVERY-th starts a run of a second, which the next ones join
        return f"soak {i}" + (" slow:1" if i % SOAK_SLOW_EVERY == 0 else "")

    texts = [f"{thread_of(i)}|{text_of(i)}" for i in range(SOAK_SENDS)]
    # at most this many sends wait for an answer: a process slower than the schedule (a busy machine)
    # makes the soak longer, never a send that times out in a queue
    in_flight = asyncio.Semaphore(SOAK_IN_FLIGHT)
    samples: list[tuple[float, int, int]] = []
    start = time.monotonic()

    async def sample_rss():
        while True:
            samples.append((time.monotonic() - start, *(rss_kb(p.pid) for p in site.web)))
            await asyncio.sleep(1.0)

    async def one(i: int):
        await asyncio.sleep(max(0.0, start + i * SOAK_SECONDS / SOAK_SENDS - time.monotonic()))
        async with in_flight:
            try:
                results[i] = await site.send(site.web[i % 2], thread_of(i), text_of(i))
            except (asyncio.TimeoutError, OSError) as exc:
                results[i] = (0, {"error": repr(exc)})

    sampler = asyncio.ensure_future(sample_rss())
    try:
        await asyncio.gather(*(one(i) for i in range(SOAK_SENDS)))
        sending = time.monotonic() - start
        await settle(site, threads, timeout=60)
    finally:
        sampler.cancel()

    statuses = Counter(status for status, _ in results)
    actions = Counter(body.get("action") for status, body in results if status == 200)
    accepted = [texts[i] for i, (status, body) in enumerate(results) if status == 200 and body.get("accepted")]
    counts = delivery_counts(site, threads, accepted)
    runs = site.runs_by_status(threads)
    first = [s for s in samples if s[0] < 10]
    last = [s for s in samples if sending - 10 <= s[0] < sending]
    rss = {}
    for n, process in enumerate(site.web):
        before = sum(s[n + 1] for s in first) / len(first)
        after = sum(s[n + 1] for s in last) / len(last)
        rss[process.name] = {"first_10s_kb": round(before), "last_10s_kb": round(after),
                             "growth_pct": round(100 * (after - before) / before, 1)}
    report("6-soak", sent=SOAK_SENDS, accepted=len(accepted), **counts, answered=site.answered(threads),
           runs=runs, run_errors=site.run_errors(threads), statuses=dict(statuses), actions=dict(actions), sending_s=round(sending, 1),
           sends_per_s=round(SOAK_SENDS / sending, 1), in_flight_max=SOAK_IN_FLIGHT, model_calls=len(
               [c for c in site.calls() if c["thread"] in set(threads)]), rss=rss)
    assert statuses == {200: SOAK_SENDS}
    assert counts == {"delivered": SOAK_SENDS, "lost": 0, "duplicated": 0}
    assert set(runs) == {"completed"}
    assert site.answered(threads) == SOAK_SENDS
    assert set(actions) == {"wake", "deliver"}  # sends woke threads and joined runs of the other process
    assert all(r["growth_pct"] < 20 for r in rss.values()), rss
    assert_clean(site, threads)
