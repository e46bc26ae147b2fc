"""Budget and limit refusals over HTTP: 429 with a stable code, the budget and its reset named,
``Retry-After`` until the reset; a refused thread run leaves its error entry in the thread."""

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async

from budgets.models import ActiveRunSlot, Budget
from budgets.selectors import budgets_cache_clear
from tests.agents.api.conftest import Api, body, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
def budgets_site(settings, settled_runs):
    from agents.registry import get_mastra
    from tests.rates import clear_rate_counters

    settings.MASTRA = "tests.budgets.site:mastra"
    get_mastra.cache_clear()
    clear_rate_counters()
    budgets_cache_clear()
    yield
    get_mastra.cache_clear()
    budgets_cache_clear()


@pytest.fixture
async def alice(transactional_db) -> Api:
    return Api(await make_user("alice"))


@sync_to_async
def budget(**fields):
    return Budget.objects.create(**{"scope": "resource", "period": "day", "unit": "tokens", "mode": "hard", **fields})


async def test_generate_past_a_spent_budget_answers_429_naming_the_budget_and_its_reset(alice):
    await budget(name="per-user", limit=Decimal(3))
    first = await alice.post("/api/agents/echo/generate", {"messages": "one two three four"})
    assert first.status_code == 200 and body(first)["finishReason"] == "stop"
    refused = await alice.post("/api/agents/echo/generate", {"messages": "again"})
    assert refused.status_code == 429
    data = body(refused)
    assert data["code"] == "budget_exceeded"
    assert data["error"] == data["message"]
    assert data["message"].startswith("budget 'per-user' is spent (")
    midnight = (datetime.now(timezone.utc) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert data["details"]["budget"] == "per-user"
    assert data["details"]["resetsAt"] == midnight.isoformat()
    assert 0 < int(refused["Retry-After"]) <= 86_400
    # another resource has a counter of its own
    bob = Api(await make_user("bob"))
    assert (await bob.post("/api/agents/echo/generate", {"messages": "hi"})).status_code == 200


async def test_stream_is_refused_before_it_starts(alice):
    await budget(name="site-day", scope="site", limit=Decimal(1))
    await alice.post("/api/agents/echo/generate", {"messages": "spend it"})
    refused = await alice.post("/api/agents/echo/stream", {"messages": "more"})
    assert (refused.status_code, body(refused)["code"]) == (429, "budget_exceeded")


async def test_a_full_concurrency_limit_answers_too_many_active_runs(alice, settings):
    settings.MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE = 1
    now = datetime.now(timezone.utc)
    await sync_to_async(ActiveRunSlot.objects.create)(run_id="other", resource_id="alice", agent_id="echo",
                                                      acquired_at=now, expires_at=now + timedelta(minutes=5))
    refused = await alice.post("/api/agents/echo/generate", {"messages": "hi"})
    assert refused.status_code == 429
    assert body(refused)["code"] == "too_many_active_runs"
    assert body(refused)["details"] == {"scope": "resource", "limit": 1, "active": 1}
    assert "Retry-After" not in refused
    await sync_to_async(ActiveRunSlot.objects.filter(run_id="other").delete)()
    ok = await alice.post("/api/agents/echo/generate", {"messages": "hi"})
    assert ok.status_code == 200
    assert await sync_to_async(ActiveRunSlot.objects.count)() == 0  # the run gave its slot back


async def test_a_message_into_a_thread_past_the_budget_stays_in_the_thread_with_the_refusal_after_it(alice, settle):
    """The thread's input is accepted (nothing is lost); its run ends before the model call with
    ``budget_exceeded``, the thread keeps the message and the refusal, and stays usable."""
    from agents.models import Message

    await budget(name="per-user", limit=Decimal(3))
    await alice.post("/api/agents/echo/generate", {"messages": "one two three four",
                                                   "memory": {"thread": "t1", "resource": "alice"}})
    sent = await alice.post("/api/agents/echo/send-message", {"message": "are you there?", "threadId": "t1"})
    assert (sent.status_code, body(sent)["action"]) == (200, "wake")
    await settle()
    stored = await sync_to_async(lambda: list(Message.objects.filter(resource_id="alice").order_by("created_at", "pk")
                                              .values_list("role", "content")))()
    assert [role for role, _ in stored] == ["user", "assistant", "signal", "assistant"]
    assert "are you there?" in str(stored[2][1])
    assert stored[3][1]["metadata"]["error"]["code"] == "budget_exceeded"
    assert stored[3][1]["metadata"]["error"]["message"].startswith("budget 'per-user' is spent")
    # raised by an operator: the thread answers again
    await sync_to_async(Budget.objects.filter(name="per-user").update)(limit=Decimal(1000))
    budgets_cache_clear()
    again = await alice.post("/api/agents/echo/send-message", {"message": "now?", "threadId": "t1"})
    assert body(again)["action"] == "wake"
    await settle()
    roles = await sync_to_async(lambda: list(Message.objects.filter(resource_id="alice").order_by("created_at", "pk")
                                             .values_list("role", flat=True)))()
    assert roles[-2:] == ["signal", "assistant"] and len(roles) == 6


async def test_a_channel_budget_counts_the_runs_that_came_in_by_its_channel_only(alice, settle):
    from budgets.models import BudgetCounter

    await budget(name="chat-only", scope="channel", match="chat", limit=Decimal(1))
    await budget(name="per-channel", scope="channel", limit=Decimal(10_000))
    for _ in range(2):  # the chat budget never applies to HTTP calls
        assert (await alice.post("/api/agents/echo/generate", {"messages": "one two"})).status_code == 200
    sent = await alice.post("/api/agents/echo/send-message", {"message": "into a thread", "threadId": "t9"})
    assert body(sent)["action"] == "wake"
    await settle()
    counters = await sync_to_async(lambda: list(BudgetCounter.objects.values_list("budget_id", "scope_value")))()
    assert counters == [("per-channel", "api")]  # the thread's run came in by the API as well
