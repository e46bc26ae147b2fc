"""The site's thread runtime accepts ``MASTRA_ACCEPTS_AT_ONCE`` inputs at once, on the real
database: sends that arrive together are accepted one after the other in their order, each wakes
its thread and its run answers (``agents.runtime.threads.admission``)."""

from __future__ import annotations

import asyncio

import pytest

from agents.apps import build_thread_runtime
from agents.runtime.testing import drain_thread_runtime
from agents.runtime.threads import get_thread_runtime, set_thread_runtime
from tests.agents.thread_harness import make_agent
from tests.runtime.threads.accept_log import record_accepts

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

TIMEOUT = 20.0


@pytest.mark.parametrize("limit", [1, 3])
async def test_sends_that_arrive_together_are_accepted_so_many_at_once(settings, limit):
    settings.MASTRA_ACCEPTS_AT_ONCE = limit
    runtime = build_thread_runtime()
    assert runtime.accept_gate.limit == limit
    set_thread_runtime(runtime)
    try:
        accepts = record_accepts(runtime.store)
        agent = make_agent("bot")
        threads = [f"t{n}" for n in range(8)]
        results = await asyncio.wait_for(asyncio.gather(*(
            agent.send_message(f"hello {t}", resource_id="u1", thread_id=t) for t in threads)), TIMEOUT)
        assert [r.action for r in results] == ["wake"] * len(threads)
        texts = [(await asyncio.wait_for(r.output.get_full_output(), TIMEOUT)).text for r in results]
        assert texts == [f"echo: hello {t}" for t in threads]
        assert accepts.most == limit
        if limit == 1:
            assert accepts.began() == threads
    finally:
        await drain_thread_runtime(get_thread_runtime())
        set_thread_runtime(None)
