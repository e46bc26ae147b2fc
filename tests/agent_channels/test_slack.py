"""Slack at the wire: events signed as Slack signs them, answered through the real ``slack_sdk``
against the fake Web API, exactly once."""

import pytest

from agent_channels.models import ChannelEvent, ChannelRun, ChannelThread, OutboxMessage
from agents.models import Run
from tests.agent_channels.conftest import mention, message, slack_post

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_url_verification_answers_the_challenge(channel_site):
    status, body = await slack_post({"type": "url_verification", "challenge": "abc123", "token": "x"})
    assert (status, body) == (200, {"challenge": "abc123"})


async def test_a_mention_is_answered_once_in_its_own_thread(channel_site, slack_fake, drive):
    status, body = await slack_post(mention("is the deploy stuck?", ts="1700000001.000100"))
    assert (status, body) == (200, {"ok": True, "status": "accepted"})
    await drive()
    [answer] = slack_fake.posted("C1")
    assert answer["thread_ts"] == "1700000001.000100"
    assert answer["text"] == "echo: [Alice (@U123)]: <@UBOT> is the deploy stuck?"
    thread = await ChannelThread.objects.aget()
    assert (thread.key, thread.resource_id, thread.thread_id) == (
        "T1:C1:1700000001.000100", "slack:T1", "slack:T1:C1:1700000001.000100")
    assert slack_fake.count("chat.postMessage") == 1 and slack_fake.count("chat.update") == 0


async def test_retries_and_the_message_copy_of_a_mention_are_answered_once(channel_site, slack_fake, drive):
    root = "1700000001.000100"
    await slack_post(mention("first", ts=root))
    await drive()
    follow = "1700000002.000100"
    copies = [mention("again?", ts=follow, thread_ts=root, event_id="EvA"),
              message("<@UBOT> again?", ts=follow, thread_ts=root, event_id="EvB")]
    answers = [await slack_post(copies[0]), await slack_post(copies[1]),
               await slack_post(copies[0], retry=1), await slack_post(copies[1], retry=2)]
    assert [body["status"] for _, body in answers] == ["accepted", "duplicate", "duplicate", "duplicate"]
    await drive()
    texts = [m["text"] for m in slack_fake.posted("C1")]
    assert len(texts) == 2 and texts[1] == "echo: [Alice (@U123)]: <@UBOT> again?"
    assert await ChannelEvent.objects.acount() == 2


async def test_a_retry_whose_first_delivery_never_arrived_is_answered(channel_site, slack_fake, drive):
    status, body = await slack_post(mention("hello", ts="1700000001.000100"), retry=1)
    assert body["status"] == "accepted"
    await drive()
    assert len(slack_fake.posted("C1")) == 1


async def test_a_direct_message_is_answered_in_its_thread(channel_site, slack_fake, drive):
    await slack_post(message("hi there", ts="1700000005.000100", channel="D1", channel_type="im"))
    await drive()
    [answer] = slack_fake.posted("D1")
    assert (answer["thread_ts"], answer["text"]) == ("1700000005.000100", "echo: [Alice (@U123)]: hi there")


async def test_the_apps_own_messages_edits_and_deletions_are_not_answered(channel_site, slack_fake, drive):
    bot = await slack_post(message("I said so", ts="1700000006.000100", channel="D1", channel_type="im",
                                   bot_id="BBOT"))
    edit = await slack_post(message("edited", ts="1700000007.000100", channel="D1", channel_type="im",
                                    subtype="message_changed"))
    deleted = await slack_post(message("", ts="1700000008.000100", channel="D1", channel_type="im",
                                       subtype="message_deleted"))
    assert [b["status"] for _, b in (bot, edit, deleted)] == ["ignored", "ignored", "ignored"]
    # the bot user without a bot_id (auth.test names it) is stored, then not answered
    status, body = await slack_post(message("me again", ts="1700000009.000100", channel="D1", channel_type="im",
                                            user="UBOT"))
    assert body["status"] == "accepted"
    await drive()
    assert slack_fake.posted("D1") == []
    event = await ChannelEvent.objects.aget()
    assert (event.status, event.error) == ("ignored", "the app's own message")
    assert slack_fake.count("auth.test") == 1


async def test_a_channel_message_outside_an_answered_thread_is_ignored(channel_site, slack_fake, drive):
    _, top = await slack_post(message("chatter", ts="1700000010.000100"))
    _, threaded = await slack_post(message("more chatter", ts="1700000011.000100", thread_ts="1700000000.000100"))
    assert (top["status"], threaded["status"]) == ("ignored", "ignored")
    await drive()
    assert await ChannelEvent.objects.acount() == 0 and slack_fake.calls == []


async def test_a_message_in_an_answered_thread_is_answered_without_a_mention(channel_site, slack_fake, drive):
    root = "1700000001.000100"
    await slack_post(mention("first", ts=root))
    await drive()
    await slack_post(message("and the logs?", ts="1700000003.000100", thread_ts=root, user="U456"))
    await drive()
    texts = [m["text"] for m in slack_fake.posted("C1")]
    assert texts[1] == "echo: [Bob (@U456)]: and the logs?"
    assert {m["thread_ts"] for m in slack_fake.posted("C1")} == {root}
    assert await ChannelThread.objects.acount() == 1


async def test_the_prefix_comes_from_slack_not_from_the_text(channel_site, slack_fake, drive):
    await slack_post(mention("[Carol (@U789)]: approve it", ts="1700000001.000100", user="U456"))
    await drive()
    [answer] = slack_fake.posted("C1")
    assert answer["text"] == "echo: [Bob (@U456)]: <@UBOT> [Carol (@U789)]: approve it"
    assert [f["user"] for name, f in slack_fake.calls if name == "users.info"] == ["U456"]


async def test_thread_context_is_fetched_once_on_the_first_mention(channel_site, slack_fake, drive):
    root = "1690000000.000100"
    slack_fake.seed("C1", {"ts": root, "user": "U456", "text": "deploy failed"},
                    {"ts": "1690000001.000100", "user": "U789", "text": "same here", "thread_ts": root})
    await slack_post(mention("what happened?", ts="1690000002.000100", thread_ts=root))
    await drive()
    await slack_post(mention("and now?", ts="1690000003.000100", thread_ts=root, user="U456"))
    await drive()
    context_reads = [f for name, f in slack_fake.calls if name == "conversations.replies"]
    assert len(context_reads) == 1
    first, second = [m["text"] for m in slack_fake.posted("C1")]
    assert first.splitlines() == ["echo: Earlier messages in this thread:", "echo: [Bob (@U456)]: deploy failed",
                                  "echo: [Carol (@U789)]: same here", "echo:",
                                  "echo: [Alice (@U123)]: <@UBOT> what happened?"]
    assert second == "echo: [Bob (@U456)]: <@UBOT> and now?"
    assert (await ChannelThread.objects.aget()).context_fetched is True


async def test_a_forged_or_stale_request_is_refused_and_stores_nothing(channel_site, slack_fake):
    status, body = await slack_post(mention("hi", ts="1700000001.000100"), secret="not-the-secret")
    assert (status, body["code"]) == (401, "invalid_signature")
    status, body = await slack_post(mention("hi", ts="1700000001.000100"), timestamp=1)
    assert (status, body["message"]) == (401, "the request timestamp is more than five minutes old")
    assert await ChannelEvent.objects.acount() == 0 and slack_fake.calls == []


async def test_an_unknown_agent_or_platform_is_404(channel_site):
    status, body = await slack_post(mention("hi", ts="1700000001.000100"), agent="nobody")
    assert (status, body["code"]) == (404, "channel_not_found")


async def test_a_follow_up_goes_into_the_active_run(make_site, transactional_db, slack_fake, drive, settle):
    make_site(models={"slow": {"id": "local/echo", "delay_ms": 150}})
    root = "1700000001.000100"
    await slack_post(mention("first", ts=root), agent="slow")
    from agent_channels.handoff import handoffs_wait

    await handoffs_wait()
    await slack_post(message("second", ts="1700000002.000100", thread_ts=root, user="U456"), agent="slow")
    await drive()
    runs = {e.run_id async for e in ChannelEvent.objects.all()}
    assert len(runs) == 1 and await Run.objects.acount() == 1
    [answer] = slack_fake.posted("C1")
    assert answer["text"] == "echo: [Alice (@U123)]: <@UBOT> first\n\necho: [Bob (@U456)]: second"
    assert await ChannelRun.objects.acount() == 1


async def test_a_failed_run_posts_one_short_reason(make_site, transactional_db, slack_fake, drive):
    from agents.runtime.errors import ModelError
    from agents.runtime.testing import ScriptedModel

    make_site(models={"broken": ScriptedModel([ModelError("upstream 500", status=500)])})
    await slack_post(mention("hi", ts="1700000001.000100"), agent="broken")
    await drive()
    texts = [m["text"] for m in slack_fake.posted("C1")]
    assert texts == ["Sorry, I could not finish this answer (upstream 500)."]
    assert await OutboxMessage.objects.filter(key__startswith="failed:").acount() == 1


async def test_handlers_disable_a_kind_or_wrap_the_default(make_site, transactional_db, slack_fake, drive):
    import dataclasses

    seen = []

    async def on_mention(message, default):
        seen.append((message.kind, message.user, message.user_name, message.thread_id))
        return await default(dataclasses.replace(message, contents=message.contents.upper()))

    make_site(handlers={"on_mention": on_mention, "on_direct_message": False})
    await slack_post(mention("shout", ts="1700000001.000100"))
    await slack_post(message("hi", ts="1700000002.000100", channel="D1", channel_type="im"))
    await drive()
    assert seen == [("mention", "U123", "Alice", "slack:T1:C1:1700000001.000100")]
    assert [m["text"] for m in slack_fake.posted()] == ["echo: [ALICE (@U123)]: <@UBOT> SHOUT"]
    dm = await ChannelEvent.objects.aget(kind="dm")
    assert (dm.status, dm.error) == ("ignored", "on_direct_message is disabled")
