"""``mastra.schedules``: Mastra's API (create, get, list, update, pause, resume, run, delete,
list_triggers), its validation and messages, and what a fire does (generate, a signal into the
thread, hooks), on the real database with an injected clock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from asgiref.sync import sync_to_async

from agents.models import Message
from agents.runtime.mastra import AgentNotFound
from agents.runtime.threads import get_thread_runtime
from agents.runtime.schedules import CronError, ScheduleError, ScheduleNotFound, to_ms
from schedules.runner import drain_fires, schedules_tick

from . import schedule_site

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]
UTC = timezone.utc


def ms(*args) -> int:
    return to_ms(datetime(*args, tzinfo=UTC))


async def test_create_returns_mastras_flat_view_with_a_normalized_id(schedules, clock):
    created = await schedules.create(agent_id="echo", cron="0 9 * * 1-5", prompt="digest", timezone="Europe/Paris",
                                     id="Morning Digest")
    # 09:00 in Paris is 08:00 UTC in March; the clock is at 08:00: the next fire is Tuesday's
    assert created.to_dict() == {
        "id": "agent_morning-digest", "agentId": "echo", "prompt": "digest", "cron": "0 9 * * 1-5",
        "timezone": "Europe/Paris", "status": "active", "nextFireAt": ms(2026, 3, 3, 8, 0),
        "createdAt": clock.ms(), "updatedAt": clock.ms(), "misfirePolicy": "once", "misfireCap": 10}
    assert (await schedules.get("morning-digest")).id == "agent_morning-digest"
    assert (await schedules.get("agent_morning-digest")).prompt == "digest"
    assert await schedules.get("nothing-here") is None


async def test_a_second_schedule_with_the_same_id_is_refused(schedules):
    await schedules.create(agent_id="echo", cron="@daily", prompt="p", id="nightly")
    with pytest.raises(ScheduleError) as caught:
        await schedules.create(agent_id="echo", cron="@hourly", prompt="q", id="agent_nightly")
    assert caught.value.code == "schedule_exists"
    assert caught.value.message == ('schedules.create: a schedule with id "agent_nightly" already exists. Use update() '
                                    "to modify it or choose a different id.")


@pytest.mark.parametrize("cron, first", [
    ("*/15 * * * *", ms(2026, 3, 2, 8, 15)),
    ("30 */10 * * * *", ms(2026, 3, 2, 8, 0, 30)),  # six fields: seconds first
    ("0 0 12 * * * 2027", ms(2027, 1, 1, 12)),  # seven fields: year last
    ("@hourly", ms(2026, 3, 2, 9)), ("@daily", ms(2026, 3, 3)), ("@weekly", ms(2026, 3, 8)),
    ("@monthly", ms(2026, 4, 1)), ("@yearly", ms(2027, 1, 1)),
])
async def test_five_six_and_seven_fields_and_the_nicknames_are_accepted(schedules, cron, first):
    created = await schedules.create(agent_id="echo", cron=cron, prompt="p")
    assert created.next_fire_at == first
    assert created.id.startswith("agent_") and len(created.id) == len("agent_") + 36


@pytest.mark.parametrize("fields, error, code, message", [
    ({"cron": "bad cron"}, CronError, "invalid_cron",
     'Invalid cron expression "bad cron": exactly five, six or seven space separated parts are required (six or '
     "seven: seconds first; seven: year last)."),
    ({"cron": "61 * * * *"}, CronError, "invalid_cron",
     'Invalid cron expression "61 * * * *": [61 * * * *] is not acceptable, out of range'),
    ({"cron": "@fortnightly"}, CronError, "invalid_cron",
     'Invalid cron expression "@fortnightly": unknown nickname; use one of @yearly, @annually, @monthly, @weekly, '
     "@daily, @midnight, @hourly."),
    ({"cron": "0 0 30 2 *"}, CronError, "invalid_cron",
     'Cron expression "0 0 30 2 *" has no future occurrence after 2026-03-02T08:00:00+00:00'),
    ({"timezone": "Mars/Olympus"}, CronError, "invalid_timezone",
     'Invalid timezone "Mars/Olympus": not an IANA time zone (e.g. "Europe/Paris", "UTC")'),
    ({"signal_type": "user"}, ScheduleError, "threadless_options", "schedules.create: signalType require a threadId."),
    ({"if_idle": {"behavior": "wake"}, "resource_id": "alice"}, ScheduleError, "threadless_options",
     "schedules.create: ifIdle, resourceId require a threadId."),
    ({"thread_id": "t1"}, ScheduleError, "missing_resource_id",
     "schedules.create requires `resourceId` when `threadId` is set."),
    ({"id": "!!!"}, ScheduleError, "invalid_schedule_id",
     'schedules.create: id "!!!" is empty after normalization. Provide an id with at least one alphanumeric character.'),
    ({"misfire_policy": "sometimes"}, ScheduleError, "invalid_misfire_policy", "misfirePolicy must be one of skip, once, all"),
    ({"thread_id": "t1", "resource_id": "alice", "if_active": {"behavior": "wake"}}, ScheduleError, "invalid_behavior",
     "ifActive.behavior must be one of deliver, persist, discard"),
])
async def test_bad_input_is_refused_with_a_named_error(schedules, fields, error, code, message):
    with pytest.raises(error) as caught:
        await schedules.create(**{"agent_id": "echo", "cron": "0 9 * * *", "prompt": "p", **fields})
    assert (caught.value.code, caught.value.message) == (code, message)
    assert await schedules.list() == []


async def test_an_unknown_agent_is_refused(schedules):
    with pytest.raises(AgentNotFound):
        await schedules.create(agent_id="nobody", cron="@daily", prompt="p")


async def test_list_filters_by_agent_status_thread_and_name(schedules, clock):
    async def create(**fields):
        clock.now += timedelta(seconds=1)  # listed oldest first
        return await schedules.create(cron="@daily", **fields)

    a = await create(agent_id="echo", prompt="p", name="a")
    b = await create(agent_id="plain", prompt="p", status="paused")
    c = await create(agent_id="echo", prompt="p", thread_id="t1", resource_id="alice")
    w = await create(workflow_id="nightly", input_data={"n": 1})
    ids = lambda found: [s.id for s in found]  # noqa: E731
    assert ids(await schedules.list()) == [a.id, b.id, c.id, w.id]
    assert ids(await schedules.list(agent_id="echo")) == [a.id, c.id]
    assert ids(await schedules.list(status="paused")) == [b.id]
    assert ids(await schedules.list(thread_id="t1")) == [c.id]
    assert ids(await schedules.list(resource_id="alice")) == [c.id]
    assert ids(await schedules.list(name="a")) == [a.id]
    assert ids(await schedules.list(workflow_id="nightly")) == [w.id]
    assert w.to_dict()["inputData"] == {"n": 1} and "agentId" not in w.to_dict()


async def test_update_changes_fields_recomputes_the_next_fire_and_keeps_the_target(schedules, clock):
    created = await schedules.create(agent_id="echo", cron="0 9 * * *", prompt="p", thread_id="t1", resource_id="alice")
    clock.now += timedelta(minutes=5)
    updated = await schedules.update(created.id, prompt="new", cron="30 8 * * *", signal_type="user",
                                     if_idle={"behavior": "persist"})
    assert (updated.prompt, updated.cron, updated.signal_type, updated.if_idle) == ("new", "30 8 * * *", "user",
                                                                                    {"behavior": "persist"})
    assert updated.next_fire_at == ms(2026, 3, 2, 8, 30) and updated.updated_at == clock.ms()
    with pytest.raises(ScheduleError) as caught:
        await schedules.update(created.id, thread_id="t2")
    assert caught.value.code == "schedule_target_fixed"
    threadless = await schedules.create(agent_id="echo", cron="@daily", prompt="p")
    with pytest.raises(ScheduleError) as caught:
        await schedules.update(threadless.id, signal_type="user")
    assert caught.value.message == "schedules.update: signalType require a threadId."
    with pytest.raises(ScheduleNotFound):
        await schedules.update("agent_missing", prompt="x")


async def test_resume_after_a_long_pause_fires_no_backlog(schedules, clock):
    created = await schedules.create(agent_id="echo", cron="0 * * * *", prompt="p")
    assert (await schedules.pause(created.id)).status == "paused"
    assert (await schedules.pause(created.id)).status == "paused"  # idempotent
    clock.now += timedelta(days=3, minutes=10)
    assert await schedules_tick(now=clock.now) == {"claimed": 0, "skipped": 0, "schedules": 0, "failed": 0,
                                                   "redispatched": 0}
    resumed = await schedules.resume(created.id)
    assert (resumed.status, resumed.next_fire_at) == ("active", ms(2026, 3, 5, 9))
    assert (await schedules_tick(now=clock.now))["claimed"] == 0
    assert await schedules.list_triggers(created.id) == []


async def test_run_fires_once_now_and_leaves_the_cadence(schedules, clock, site):
    created = await schedules.create(agent_id="plain", cron="0 9 * * *", prompt="status report", name="r")
    receipt = await schedules.run(created.id)
    assert receipt.to_dict() == {"scheduleId": created.id, "claimId": f"manual_{created.id}_{clock.ms()}",
                                 "scheduledFireAt": clock.ms()}
    await drain_fires()
    [trigger] = await schedules.list_triggers(created.id)
    assert (trigger.outcome, trigger.trigger_kind, trigger.claim_id) == ("succeeded", "manual", receipt.claim_id)
    assert trigger.run_id and trigger.to_dict()["runId"] == trigger.run_id
    after = await schedules.get(created.id)
    assert (after.next_fire_at, after.last_fire_at, after.last_outcome) == (created.next_fire_at, None, "succeeded")
    assert [name for name, _ in site.HOOK_CALLS] == ["prepare", "on_finish"]
    finish = site.HOOK_CALLS[1][1]
    assert (finish["outcome"], finish["run_id"], finish["agent_id"]) == ("succeeded", trigger.run_id, "plain")
    assert finish["trigger"]["kind"] == "manual"
    assert "status report" in finish["result"]["text"]
    assert finish["effective"]["prompt"] == "status report"


async def test_delete_removes_the_schedule_and_its_history(schedules):
    created = await schedules.create(agent_id="plain", cron="@daily", prompt="p")
    await schedules.run(created.id)
    await drain_fires()
    await schedules.delete("agent_" + created.id[len("agent_"):])
    assert await schedules.get(created.id) is None
    assert await schedules.list_triggers(created.id) == []
    await schedules.delete(created.id)  # nothing to delete: no error, as Mastra
    with pytest.raises(ScheduleNotFound):
        await schedules.run(created.id)


async def test_a_threaded_fire_sends_a_signal_into_the_thread(schedules, clock):
    await schedule_site.echo.memory.create_thread(resource_id="alice", thread_id="ops")
    created = await schedules.create(agent_id="echo", cron="0 9 * * *", prompt="check the pipeline", thread_id="ops",
                                     resource_id="alice", attributes={"source": "cron"})
    clock.now = datetime(2026, 3, 2, 9, 0, 1, tzinfo=UTC)
    assert (await schedules_tick(now=clock.now))["claimed"] == 1
    await drain_fires()
    await get_thread_runtime().drain_background(timeout=30)  # the run the signal woke
    [trigger] = await schedules.list_triggers(created.id)
    assert (trigger.outcome, trigger.scheduled_fire_at, trigger.claim_id) == (
        "succeeded", ms(2026, 3, 2, 9), f"sched_{created.id}_{ms(2026, 3, 2, 9)}")
    signals = await sync_to_async(list)(Message.objects.filter(thread__thread_id="ops", role="signal")
                                        .values_list("type", "content"))
    assert len(signals) == 1 and signals[0][0] == "schedule"
    assert "check the pipeline" in str(signals[0][1]) and "cron" in str(signals[0][1])
    after = await schedules.get(created.id)
    assert (after.last_fire_at, after.last_run_id, after.next_fire_at) == (
        clock.ms(), trigger.claim_id, ms(2026, 3, 3, 9))


async def test_a_fire_into_a_missing_thread_fails_and_pauses_the_schedule(schedules, clock, site):
    created = await schedules.create(agent_id="echo", cron="0 9 * * *", prompt="p", thread_id="gone",
                                     resource_id="alice")
    clock.now = datetime(2026, 3, 2, 9, 0, 1, tzinfo=UTC)
    await schedules_tick(now=clock.now)
    await drain_fires()
    [trigger] = await schedules.list_triggers(created.id)
    assert (trigger.outcome, trigger.error) == ("failed", 'thread "gone" not found')
    assert (await schedules.get(created.id)).status == "paused"
    [(name, context)] = [c for c in site.HOOK_CALLS if c[0] == "on_error"]
    assert context["phase"] == "run" and str(context["error"]) == 'thread "gone" not found'


async def test_prepare_returning_none_skips_and_raising_fails_the_fire(schedules, site):
    skip = await schedules.create(agent_id="plain", cron="@daily", prompt="p", id="skip-me")
    boom = await schedules.create(agent_id="plain", cron="@daily", prompt="p", id="boom")
    site.PREPARE.update({skip.id: None, boom.id: RuntimeError("no data today")})
    await schedules.run(skip.id)
    await schedules.run(boom.id)
    await drain_fires()
    [skipped] = await schedules.list_triggers(skip.id)
    [failed] = await schedules.list_triggers(boom.id)
    assert (skipped.outcome, skipped.error) == ("skipped", "prepare returned None")
    assert (failed.outcome, failed.error) == ("failed", "no data today")
    hooks = sorted((name, c["schedule"].id, c.get("outcome") or c.get("phase")) for name, c in site.HOOK_CALLS)
    assert hooks == [("on_error", boom.id, "prepare"), ("on_finish", skip.id, "skipped"),
                     ("prepare", boom.id, None), ("prepare", skip.id, None)]


async def test_prepare_overrides_the_prompt(schedules, site):
    created = await schedules.create(agent_id="plain", cron="@daily", prompt="stored")
    site.PREPARE[created.id] = {"prompt": "from the hook"}
    await schedules.run(created.id)
    await drain_fires()
    finish = [c for n, c in site.HOOK_CALLS if n == "on_finish"][0]
    assert finish["effective"]["prompt"] == "from the hook" and "from the hook" in finish["result"]["text"]


async def test_a_workflow_schedule_runs_the_workflow_with_its_input(schedules, clock, site):
    created = await schedules.create(workflow_id="nightly", cron="0 3 * * *", input_data={"n": 2}, id="nightly run")
    assert created.id == "schedule_nightly-run"
    clock.now = datetime(2026, 3, 3, 3, 0, 2, tzinfo=UTC)
    await schedules_tick(now=clock.now)
    await drain_fires()
    assert site.WORKFLOW_INPUTS == [({"n": 2}, created.id)]
    [trigger] = await schedules.list_triggers(created.id)
    assert trigger.outcome == "succeeded"
