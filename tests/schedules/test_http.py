"""``/api/schedules``: Mastra's routes and shapes, errors with stable codes, and isolation (a user
sees and changes only their resource's schedules and the threadless ones they created; staff all)."""

from __future__ import annotations

import pytest

from schedules.runner import drain_fires
# the HTTP API tests' personas (a user's token each; ops is staff) and body reader
from tests.agents.api.conftest import alice, anonymous, body, bob, ops  # noqa: F401 - fixtures

from . import schedule_site

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
async def alices_thread(transactional_db):
    await schedule_site.echo.memory.create_thread(resource_id="alice", thread_id="standup")


async def test_a_threaded_schedule_is_seen_and_changed_by_its_resource_and_staff_only(alice, bob, ops, alices_thread):
    created = await alice.post("/api/schedules", {"agentId": "echo", "cron": "0 9 * * 1-5", "prompt": "standup?",
                                                  "id": "standup", "threadId": "standup", "resourceId": "alice",
                                                  "signalType": "user", "ifIdle": {"behavior": "wake"}})
    assert created.status_code == 200, created.content
    view = body(created)
    assert list(view) == ["id", "agentId", "threadId", "resourceId", "prompt", "cron", "status", "nextFireAt",
                          "signalType", "ifIdle", "createdAt", "updatedAt", "misfirePolicy", "misfireCap"]
    assert (view["id"], view["threadId"], view["ifIdle"]) == ("agent_standup", "standup", {"behavior": "wake"})
    assert body(await alice.get("/api/schedules/agent_standup")) == view
    assert body(await alice.get("/api/schedules/standup")) == view  # Mastra's slug lookup
    assert [s["id"] for s in body(await alice.get("/api/schedules"))["schedules"]] == ["agent_standup"]
    assert [s["id"] for s in body(await ops.get("/api/schedules", agentId="echo"))["schedules"]] == ["agent_standup"]
    assert body(await bob.get("/api/schedules")) == {"schedules": []}
    for response in [await bob.get("/api/schedules/agent_standup"), await bob.post("/api/schedules/agent_standup/pause"),
                     await bob.post("/api/schedules/agent_standup/run"), await bob.delete("/api/schedules/agent_standup"),
                     await bob.patch("/api/schedules/agent_standup", {"prompt": "x"}),
                     await bob.get("/api/schedules/agent_standup/triggers"), await bob.get("/api/schedules/nope")]:
        assert (response.status_code, body(response)) == (404, {"error": "Schedule not found", "code": "schedule_not_found",
                                                                "message": "Schedule not found"})
    paused = await ops.post("/api/schedules/agent_standup/pause")
    assert body(paused)["status"] == "paused"


async def test_a_threadless_schedule_is_its_creators(alice, bob, ops):
    created = body(await alice.post("/api/schedules", {"agentId": "plain", "cron": "@daily", "prompt": "digest"}))
    assert created["id"].startswith("agent_") and "threadId" not in created
    assert [s["id"] for s in body(await alice.get("/api/schedules"))["schedules"]] == [created["id"]]
    assert body(await bob.get("/api/schedules")) == {"schedules": []}
    assert (await bob.get(f"/api/schedules/{created['id']}")).status_code == 404
    assert (await ops.get(f"/api/schedules/{created['id']}")).status_code == 200


async def test_a_threaded_schedule_needs_the_callers_existing_thread(alice, bob, alices_thread):
    other = await bob.post("/api/schedules", {"agentId": "echo", "cron": "@daily", "prompt": "p", "threadId": "standup",
                                              "resourceId": "alice"})
    assert (other.status_code, body(other)["code"]) == (403, "resource_forbidden")
    missing = await alice.post("/api/schedules", {"agentId": "echo", "cron": "@daily", "prompt": "p",
                                                  "threadId": "nope", "resourceId": "alice"})
    assert (missing.status_code, body(missing)["code"]) == (404, "thread_not_found")


@pytest.mark.parametrize("payload, status, code, message", [
    ({"cron": "bad cron"}, 400, "invalid_cron",
     'Invalid cron expression "bad cron": exactly five, six or seven space separated parts are required (six or seven: '
     "seconds first; seven: year last)."),
    ({"timezone": "Mars/Olympus"}, 400, "invalid_timezone",
     'Invalid timezone "Mars/Olympus": not an IANA time zone (e.g. "Europe/Paris", "UTC")'),
    ({"signalType": "user"}, 400, "threadless_options", "schedules.create: signalType require a threadId."),
    ({"extra": 1}, 400, "invalid_request", 'Unrecognized key: "extra"'),
    ({"agentId": "nope"}, 404, "agent_not_found", "no agent with id 'nope'"),
    ({"prompt": 3}, 400, "invalid_field", "prompt must be a string"),
    ({"misfireCap": 0}, 400, "invalid_misfire_cap", "misfireCap must be a whole number from 1 to 1000"),
])
async def test_bad_create_bodies_get_a_4xx_with_a_stable_code(alice, payload, status, code, message):
    response = await alice.post("/api/schedules", {"agentId": "plain", "cron": "@daily", "prompt": "p", **payload})
    assert (response.status_code, body(response)) == (status, {"error": message, "code": code, "message": message})


async def test_pause_resume_update_run_triggers_and_delete(alice, anonymous):
    first = await alice.post("/api/schedules", {"agentId": "plain", "cron": "0 9 * * *", "prompt": "p", "id": "daily"})
    assert first.status_code == 200
    again = await alice.post("/api/schedules", {"agentId": "plain", "cron": "0 9 * * *", "prompt": "p", "id": "daily"})
    assert (again.status_code, body(again)["code"]) == (409, "schedule_exists")
    assert body(await alice.post("/api/schedules/agent_daily/pause"))["status"] == "paused"
    assert body(await alice.post("/api/schedules/agent_daily/resume"))["status"] == "active"
    updated = await alice.patch("/api/schedules/agent_daily", {"prompt": "new", "misfirePolicy": "skip"})
    assert (body(updated)["prompt"], body(updated)["misfirePolicy"]) == ("new", "skip")
    fixed = await alice.patch("/api/schedules/agent_daily", {"threadId": "elsewhere"})
    assert (fixed.status_code, body(fixed)["code"]) == (400, "schedule_target_fixed")
    receipt = body(await alice.post("/api/schedules/agent_daily/run"))
    assert list(receipt) == ["scheduleId", "claimId", "scheduledFireAt"]
    assert receipt["claimId"] == f"manual_agent_daily_{receipt['scheduledFireAt']}"
    await drain_fires()
    triggers = body(await alice.get("/api/schedules/agent_daily/triggers", limit="5"))["triggers"]
    assert [(t["outcome"], t["triggerKind"], t["scheduledFireAt"]) for t in triggers] == [
        ("succeeded", "manual", receipt["scheduledFireAt"])]
    assert list(triggers[0]) == ["id", "scheduleId", "runId", "scheduledFireAt", "actualFireAt", "outcome",
                                 "triggerKind"]
    bad_limit = await alice.get("/api/schedules/agent_daily/triggers", limit="0")
    assert (bad_limit.status_code, body(bad_limit)["code"]) == (400, "invalid_field")
    assert body(await alice.delete("/api/schedules/agent_daily")) == {"message": "Schedule deleted"}
    assert (await alice.get("/api/schedules/agent_daily")).status_code == 404
    assert (await anonymous.get("/api/schedules")).status_code == 401
