"""The outbox at the wire (Slack): edits paced to one a second with the final text once, long
answers split, 429 with Retry-After, and a post Slack accepted before a timeout never posted twice."""

import asyncio

import pytest

from agent_channels.handoff import handoffs_wait
from agent_channels.models import OutboxBucket, OutboxMessage, RateLimitWait
from agent_channels.outbox import outbox_retry, outbox_send_due
from agent_channels.relay import relay_due
from agents.models import ThreadEvent
from tests.agent_channels.conftest import Clock, mention, slack_post

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

ROOT = "1700000001.000100"


class GatedModel:
    """Streams ``chunks`` text deltas, ``every`` at a time, each batch once its gate is opened."""

    provider, model_id = "test", "gated"

    def __init__(self, chunks: int = 200, every: int = 20):
        self.chunks, self.every = chunks, every
        self.gates = [asyncio.Event() for _ in range(chunks // every)]

    async def stream(self, request):
        yield {"type": "response-metadata", "id": "gated-1", "model_id": None, "timestamp": None, "headers": {}}
        for i in range(self.chunks):
            if i % self.every == 0:
                await self.gates[i // self.every].wait()
            yield {"type": "text-delta", "text": f"{i} "}
        yield {"type": "finish", "finish_reason": "stop",
               "usage": {"input_tokens": 1, "output_tokens": self.chunks, "total_tokens": self.chunks + 1}}


async def logged_deltas(count: int) -> None:
    """Wait until the thread's log holds ``count`` text deltas (a step's chunks are written within 100 ms)."""
    for _ in range(2000):
        if await ThreadEvent.objects.filter(chunk__type="text-delta").acount() >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"the log never held {count} text deltas")


async def one_pass(now) -> None:
    await relay_due(now=now)
    await outbox_send_due(now=now)


async def test_a_200_chunk_answer_is_one_post_and_paced_edits_with_the_final_text_once(
        make_site, transactional_db, slack_fake, settle):
    model = GatedModel()
    make_site(models={"gated": model})
    await slack_post(mention("count to 200", ts=ROOT), agent="gated")
    await handoffs_wait()
    clock = Clock(step=0.5)
    for batch, gate in enumerate(model.gates):
        gate.set()
        await logged_deltas(20 * (batch + 1))
        await one_pass(clock.tick())
    await settle()
    await one_pass(clock.tick())
    # a post at 0.5 s, edits at 1.5, 2.5, 3.5, 4.5 s (one a second at most) and the final text at 5.5 s
    assert (slack_fake.count("chat.postMessage"), slack_fake.count("chat.update")) == (1, 5)
    [answer] = slack_fake.posted("C1")
    assert answer["text"] == "".join(f"{i} " for i in range(200))
    row = await OutboxMessage.objects.aget(key__startswith="answer:")
    assert (row.status, row.final, row.sent_version == row.version, row.calls) == ("sent", True, True, 6)
    await one_pass(clock.tick())
    assert slack_fake.count("chat.update") == 5  # nothing more once the final text is sent


async def test_a_long_answer_is_split_at_slacks_limit(channel_site, slack_fake, drive):
    words = "word " * 1800
    await slack_post(mention(words.strip(), ts=ROOT))
    await drive()
    texts = [m["text"] for m in slack_fake.posted("C1")]
    assert len(texts) == 3 and all(len(t) <= 4000 for t in texts)
    assert "".join(texts) == f"echo: [Alice (@U123)]: <@UBOT> {words.strip()}"


async def test_a_429_waits_for_retry_after(channel_site, slack_fake, settle):
    slack_fake.script("chat.postMessage", ("rate_limit", 7))
    await slack_post(mention("hello", ts=ROOT))
    await handoffs_wait()
    await settle()
    clock = Clock(step=1.0)
    start = clock.tick()
    await one_pass(start)
    row = await OutboxMessage.objects.aget()
    assert (row.status, row.attempts, (row.next_attempt_at - start).total_seconds()) == ("pending", 0, 7.0)
    assert [w.seconds async for w in RateLimitWait.objects.all()] == [7.0]
    assert (await OutboxBucket.objects.aget(key="slack:T1")).blocked_until == row.next_attempt_at
    await one_pass(clock.tick(3))
    assert slack_fake.count("chat.postMessage") == 1
    await one_pass(clock.tick(4))
    assert slack_fake.count("chat.postMessage") == 2 and len(slack_fake.posted("C1")) == 1
    assert (await OutboxMessage.objects.aget()).status == "sent"


async def test_a_post_slack_accepted_before_a_timeout_is_not_posted_again(make_site, transactional_db, slack_fake,
                                                                          settle):
    make_site(timeout=1.0)
    slack_fake.script("chat.postMessage", ("hang", 2.5))
    await slack_post(mention("hello", ts=ROOT))
    await handoffs_wait()
    await settle()
    clock = Clock()
    await one_pass(clock.tick())
    row = await OutboxMessage.objects.aget()
    assert (row.status, row.attempts, row.platform_ref) == ("pending", 1, "")
    assert "TimeoutError" in row.last_error
    await one_pass(clock.tick())
    row = await OutboxMessage.objects.aget()
    [posted] = slack_fake.posted("C1")
    assert (row.status, row.platform_ref) == ("sent", posted["ts"])
    assert [slack_fake.count(m) for m in ("chat.postMessage", "conversations.replies", "chat.update")] == [1, 1, 1]
    assert posted["text"] == "echo: [Alice (@U123)]: <@UBOT> hello"


async def test_a_failure_is_retried_with_backoff_then_failed_and_retried_from_the_admin(
        channel_site, slack_fake, settle, settings):
    settings.MASTRA_CHANNELS_MAX_ATTEMPTS = 2
    slack_fake.script("chat.postMessage", ("error", 500, "internal_error"), ("error", 500, "internal_error"))
    await slack_post(mention("hello", ts=ROOT))
    await handoffs_wait()
    await settle()
    clock = Clock(step=1.0)
    start = clock.tick()
    await one_pass(start)
    row = await OutboxMessage.objects.aget()
    assert (row.status, row.attempts, (row.next_attempt_at - start).total_seconds()) == ("pending", 1, 2.0)
    await one_pass(clock.tick(2))
    row = await OutboxMessage.objects.aget()
    assert (row.status, row.last_error) == ("failed", "internal_error")
    await one_pass(clock.tick(60))
    assert slack_fake.count("chat.postMessage") == 2
    assert await outbox_retry_async([row.pk], clock.now) == 1
    await one_pass(clock.now)
    assert (await OutboxMessage.objects.aget()).status == "sent" and len(slack_fake.posted("C1")) == 1


async def outbox_retry_async(ids, now):
    from agents.connections import async_twin

    return await async_twin(outbox_retry)(ids=ids, now=now)
