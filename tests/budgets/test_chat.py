"""The chat websocket's runs count against the ``chat`` channel's budgets; a refused run's
``error`` chunk carries ``budget_exceeded`` (the page's card), and the thread keeps the refusal."""

from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async

from agents.models import Message
from agents.registry import get_mastra
from agents.runtime import Mastra
from budgets.models import Budget, BudgetCounter
from budgets.policy import DatabaseRunPolicy
from tests.chat import site
from tests.chat.wsclient import frames_until, open_socket, run_ended, send

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def budgeted_chat(settings, monkeypatch):
    from tests.rates import clear_rate_counters

    settings.MASTRA = "tests.chat.site:mastra"
    clear_rate_counters()
    monkeypatch.setattr(site, "mastra", Mastra(agents=site.build_agents(), policy=DatabaseRunPolicy()))
    get_mastra.cache_clear()
    yield
    get_mastra.cache_clear()


@pytest.fixture
async def alice():
    from django.contrib.auth import get_user_model

    return await sync_to_async(get_user_model().objects.create_user)("alice", password="x")


async def test_a_chat_run_past_the_chat_budget_ends_with_budget_exceeded_and_the_thread_keeps_it(budgeted_chat, alice):
    from tests.agents.thread_harness import settle, wait_idle

    await sync_to_async(Budget.objects.create)(name="chat-day", scope="channel", match="chat", period="day",
                                               unit="tokens", limit=Decimal(1), mode="hard")
    comm = await open_socket(alice)
    await comm.receive_json_from()  # the snapshot
    await send(comm, {"type": "send-message", "message": "hello there"})
    first = await frames_until(comm, run_ended)
    assert first[-1]["payload"]["stepResult"]["reason"] == "stop"
    await wait_idle("alice", "t1")
    await send(comm, {"type": "send-message", "message": "and again"})
    second = await frames_until(comm, run_ended)
    errors = [f["payload"]["error"] for f in second if f["type"] == "error"]
    assert [e["code"] for e in errors] == ["budget_exceeded"]
    assert errors[0]["message"].startswith("budget 'chat-day' is spent (")
    assert second[-1]["payload"]["stepResult"]["reason"] == "error"
    await comm.disconnect()
    await settle()
    assert await sync_to_async(lambda: list(BudgetCounter.objects.values_list("scope_value", flat=True)))() == ["chat"]
    last = await sync_to_async(lambda: Message.objects.filter(resource_id="alice").order_by("created_at", "pk").last())()
    assert last.content["metadata"]["error"]["code"] == "budget_exceeded"
