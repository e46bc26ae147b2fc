"""The channel each entry point names for the runs it starts, as the step observer (and so the
ledger) sees it: the HTTP API (generate, send-message), the chat page, Slack and GitHub, a webhook,
a schedule (with and without a thread). An input that wakes a thread carries the channel in the
stream options stored with it, to the run that answers."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from agents.runtime import Mastra
from agents.runtime.tracing import CHANNEL_KEY, add_step_observer, if_idle_with_channel, remove_step_observer
from tests.agents.api.conftest import Api, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def steps():
    seen: list[dict] = []
    observer = add_step_observer(seen.append)
    yield seen
    remove_step_observer(observer)


def channels(seen: list[dict]) -> list[tuple]:
    return [(s["agent_id"], s["resource_id"], s["thread_id"], s["channel"]) for s in seen]


async def test_an_api_generate_is_channel_api(api_site, settled_runs, steps):
    alice = Api(await make_user("alice"))
    response = await alice.post("/api/agents/plain/generate", {"messages": "hi",
                                                                "requestContext": {CHANNEL_KEY: "chat"}})
    assert response.status_code == 200
    # the caller's own context cannot pass its run off as another channel's
    assert channels(steps) == [("plain", "alice", None, "api")]


async def test_an_api_send_message_that_wakes_a_thread_is_channel_api(api_site, settled, steps):
    alice = Api(await make_user("alice"))
    response = await alice.post("/api/agents/echo/send-message", {"message": "hi", "threadId": "t1"})
    assert response.status_code == 200
    await settled()
    assert channels(steps) == [("echo", "alice", "t1", "api")]


async def test_a_chat_message_is_channel_chat(settled, steps):
    from chat.actions import Target, message_send
    from chat.frames import Frame
    from tests.agents.thread_harness import make_agent

    agent = make_agent("bot")
    frames = await message_send(Target(agent, "alice", "t1"), Frame(type="send-message", message="hi"))
    assert frames[0]["action"] == "wake"
    await settled()
    assert channels(steps) == [("bot", "alice", "t1", "chat")]


@pytest.mark.parametrize("platform", ["slack", "github"])
async def test_a_platform_mention_is_channel_slack_or_github(platform, settled, steps):
    from agent_channels.handoff import send
    from agents.runtime.channels import ChannelMessage
    from tests.agents.thread_harness import make_agent

    agent = make_agent("bot")
    message = ChannelMessage(platform=platform, kind="mention", thread_key="k1", resource_id="alice",
                             thread_id="t1", user="U1", user_name="Alice", text="hi", contents="Alice: hi")
    assert (await send(agent, {"platform": platform, "id": 7}, message)).action == "wake"
    await settled()
    assert channels(steps) == [("bot", "alice", "t1", platform)]


async def test_a_webhook_notification_is_channel_webhook(api_site, settled, steps, monkeypatch):
    from inbox.webhooks.events import WebhookEvent
    from inbox.webhooks.services import webhook_notify
    from tests.agents.thread_harness import make_agent

    agent = make_agent("bot")
    monkeypatch.setattr("inbox.webhooks.services.get_mastra", lambda: Mastra(agents={"bot": agent}))

    class Endpoint:
        agent_id, resource_id, source, priority_rules, thread_template = "bot", "alice", "github", {}, "{source}"

    event = WebhookEvent(event="push", delivery_id="d1", default_priority="urgent",
                         notification={"kind": "push", "summary": "a push", "source": "github"})
    outcome = await webhook_notify(Endpoint(), event)
    assert outcome["threadId"] == "github"
    await settled()
    assert channels(steps) == [("bot", "alice", "github", "webhook")]


async def test_a_schedule_fire_is_channel_schedule(settled, steps):
    from agents.runtime.schedules.execute import execute_schedule_fire
    from agents.runtime.schedules.records import Schedule
    from tests.agents.thread_harness import make_agent

    agent = make_agent("bot")
    mastra = Mastra(agents={"bot": agent})
    now = datetime.now(timezone.utc)
    threadless = Schedule(id="s1", kind="agent", cron="* * * * *", status="active", next_fire_at=0, created_at=0,
                          updated_at=0, agent_id="bot", prompt="the digest")
    threaded = Schedule(id="s2", kind="agent", cron="* * * * *", status="active", next_fire_at=0, created_at=0,
                        updated_at=0, agent_id="bot", prompt="the digest", thread_id="t1", resource_id="alice")
    assert (await execute_schedule_fire(mastra, threadless, kind="manual", fired_at=now)).outcome == "succeeded"
    await agent.send_message("hi", resource_id="alice", thread_id="t1",
                             if_idle=if_idle_with_channel(None, "chat"))  # the thread the schedule fires into
    await settled()
    fired = await execute_schedule_fire(mastra, threaded, kind="manual", fired_at=now)
    assert fired.outcome == "succeeded", fired.reason
    await settled()
    assert channels(steps) == [("bot", None, None, "schedule"), ("bot", "alice", "t1", "chat"),
                               ("bot", "alice", "t1", "schedule")]


async def test_a_run_started_from_python_has_no_channel_unless_it_names_one(settled, steps):
    from tests.agents.thread_harness import make_agent

    agent = make_agent("bot")
    await agent.generate("hi")
    await agent.generate("hi", request_context={CHANNEL_KEY: "api"})
    assert [s["channel"] for s in steps] == [None, "api"]


def test_if_idle_with_channel_keeps_the_branch_and_leaves_bad_ones_to_the_checks():
    assert if_idle_with_channel(None, "chat") == {"stream_options": {"request_context": {CHANNEL_KEY: "chat"}}}
    assert if_idle_with_channel({"behavior": "persist", "streamOptions": {"request_context": {"a": 1}, "max_steps": 2}},
                                "api") == {"behavior": "persist", "streamOptions": {
                                    "request_context": {"a": 1, CHANNEL_KEY: "api"}, "max_steps": 2}}
    assert if_idle_with_channel("wake", "api") == "wake"
    assert if_idle_with_channel({"stream_options": 3}, "api") == {"stream_options": 3}


@pytest.fixture
def settled():
    from agents.runtime.testing import drain_thread_runtime
    from agents.runtime.threads import get_thread_runtime

    async def wait() -> None:
        await drain_thread_runtime(get_thread_runtime())

    return wait


async def test_a_step_names_the_editor_version_its_definition_came_from(steps):
    from agents.runtime.overrides import AgentOverrides
    from tests.agents.thread_harness import make_agent

    class Editor:
        async def agent_overrides(self, agent, selection):
            return AgentOverrides(instructions="Be brief.", version_id="42")

    agent = make_agent("bot")
    Mastra(agents={"bot": agent}, overrides=Editor())
    await agent.generate("hi")
    plain = make_agent("plain")
    await plain.generate("hi")
    assert [(s["agent_id"], s["editor_version"]) for s in steps] == [("bot", "42"), ("plain", None)]
