"""The database's run policy (budgets.policy): counters per budget and period, hard and soft,
resets at the period boundary in the site's time zone, per-run budgets, the admin's budgets over
the code's, and nothing touched when no budget applies."""

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from agents.runtime import Agent, InMemoryMemory, Mastra, create_tool
from agents.runtime.agent.title import title_drain
from agents.runtime.run_policy import RESOURCE_ID_KEY
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from budgets.models import Budget, BudgetCounter
from budgets.policy import DatabaseRunPolicy
from budgets.selectors import admin_budgets, budget_statuses, budgets_cache_clear
from tests.queries import statements

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ping = create_tool(id="ping", description="Ping.", input_schema={"type": "object"}, execute=lambda i: {"ok": True})


class Clock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(autouse=True)
def fresh_budgets():
    budgets_cache_clear()
    yield
    budgets_cache_clear()


@pytest.fixture
def clock():
    return Clock(datetime(2026, 12, 3, 10, 0, tzinfo=timezone.utc))


def spender(model, clock, budgets=(), *, pricer=None, memory=False):
    agent = Agent(id="spender", instructions="Spend.", model=model, tools={"ping": ping},
                  memory=InMemoryMemory() if memory else None)
    policy = DatabaseRunPolicy(now=clock, **({"pricer": pricer} if pricer else {}))
    Mastra(agents={"spender": agent}, policy=policy, budgets=list(budgets))
    return agent


def as_alice(**options):
    return {"request_context": {RESOURCE_ID_KEY: "alice"}, **options}


async def counters():
    from asgiref.sync import sync_to_async

    return await sync_to_async(lambda: sorted(BudgetCounter.objects.values_list(
        "budget_id", "scope_value", "period_key", "spent", "reached_at")))()


async def test_a_hard_budget_refuses_the_call_once_spent_and_counts_every_step(clock):
    model = ScriptedModel([tool_step(("c1", "ping", {}), usage=(30, 10)), tool_step(("c2", "ping", {}), usage=(30, 10)),
                           text_step("never")])
    agent = spender(model, clock, [{"id": "alice-day", "scope": "resource", "unit": "tokens", "limit": 50}])
    result = await agent.generate("go", max_steps=5, **as_alice())
    assert model.calls == 2
    assert result.error.code == "budget_exceeded"
    assert result.error.details["resetsAt"] == "2026-12-04T00:00:00+00:00"
    assert [(b, who, p, int(s)) for b, who, p, s, _ in await counters()] == [("alice-day", "alice", "2026-12-03", 80)]
    assert (await counters())[0][4] == clock.now  # reached at the step that crossed it


async def test_the_counter_resets_at_midnight_in_the_site_time_zone(clock, settings):
    settings.MASTRA_BUDGET_TIME_ZONE = "America/New_York"
    clock.now = datetime(2026, 12, 4, 4, 0, tzinfo=timezone.utc)  # 23:00 on the 3rd in New York
    model = ScriptedModel([text_step("spent", usage=(100, 0)), text_step("next day", usage=(1, 0))])
    agent = spender(model, clock, [{"id": "site-day", "unit": "tokens", "limit": 100}])
    assert (await agent.generate("a")).error is None
    refused = await agent.generate("b")
    assert refused.error.details["resetsAt"] == "2026-12-04T00:00:00-05:00"
    clock.now = datetime(2026, 12, 4, 4, 59, 59, tzinfo=timezone.utc)  # a second before midnight there
    assert (await agent.generate("c")).error.code == "budget_exceeded"
    clock.now = datetime(2026, 12, 4, 5, 0, tzinfo=timezone.utc)  # midnight in New York
    assert (await agent.generate("d")).text == "next day"
    assert [(p, int(s)) for _, _, p, s, _ in await counters()] == [("2026-12-03", 100), ("2026-12-04", 1)]


async def test_a_soft_budget_posts_one_notice_per_period_and_runs_go_on(clock):
    model = ScriptedModel([text_step(str(n), usage=(60, 0)) for n in range(4)])
    agent = spender(model, clock, [{"id": "watch", "unit": "tokens", "limit": 100, "mode": "soft"}], memory=True)
    notices = []
    for n in range(3):
        result = await agent.generate("go", memory={"resource": "alice", "thread": "t1"},
                                      on_chunk=lambda c: notices.append(c) if c["type"] == "data-budget-notice" else None)
        assert (result.error, result.text) == (None, str(n))
    assert [c["data"]["budget"] for c in notices] == ["watch"]
    clock.now += timedelta(days=1)
    await agent.generate("go", memory={"resource": "alice", "thread": "t1"},
                         on_chunk=lambda c: notices.append(c) if c["type"] == "data-budget-notice" else None)
    assert len(notices) == 1  # 60 of 100 on the new day: no notice yet


async def test_a_per_run_budget_counts_each_run_apart(clock):
    model = ScriptedModel([tool_step(("c1", "ping", {}), usage=(40, 0)), tool_step(("c2", "ping", {}), usage=(40, 0)),
                           text_step("second run", usage=(40, 0))])
    agent = spender(model, clock, [{"id": "loop-guard", "period": "run", "unit": "tokens", "limit": 70}])
    first = await agent.generate("loop", max_steps=10)
    assert (model.calls, first.error.code) == (2, "budget_exceeded")
    second = await agent.generate("again")
    assert second.text == "second run"
    keys = [(p.startswith("run:"), int(s)) for _, _, p, s, _ in await counters()]
    assert sorted(keys) == [(True, 40), (True, 80)]


async def test_a_cost_budget_adds_the_priced_cost_and_skips_a_model_with_no_price(clock):
    prices = {"scripted": Decimal("0.25")}
    model = ScriptedModel([tool_step(("c1", "ping", {}), usage=(1, 1)), tool_step(("c2", "ping", {}), usage=(1, 1)),
                           text_step("x")])
    agent = spender(model, clock, [{"id": "usd", "unit": "usd", "limit": "0.5"}],
                    pricer=lambda provider, m, usage, at: prices.get(m))
    result = await agent.generate("go", max_steps=5)
    assert (model.calls, result.error.code) == (2, "budget_exceeded")
    assert str(result.error).startswith("budget 'usd' is spent (0.5 USD of 0.5 USD per day)")
    prices.clear()  # no price: the steps add nothing (recorded as tokens by the ledger)
    free = spender(ScriptedModel([text_step("free", usage=(9, 9))]), clock,
                   [{"id": "usd-2", "unit": "usd", "limit": "0.5"}], pricer=lambda *a: None)
    assert (await free.generate("go")).text == "free"
    assert [b for b, *_ in await counters()] == ["usd"]


async def test_an_admin_budget_replaces_the_code_budget_of_its_name(clock):
    from asgiref.sync import sync_to_async

    await sync_to_async(Budget.objects.create)(name="site-day", scope="site", period="day", unit="tokens",
                                               limit=Decimal(10), mode="hard")
    model = ScriptedModel([text_step("a", usage=(10, 0)), text_step("b")])
    agent = spender(model, clock, [{"id": "site-day", "unit": "tokens", "limit": 1000}])
    assert (await agent.generate("a")).error is None
    assert (await agent.generate("b")).error.details["limit"] == "10.000000"
    statuses = await sync_to_async(budget_statuses)(agent.mastra.budgets, now=clock.now)
    assert [(s.budget.id, s.spent_text, s.limit_text, s.percent, s.resets_at.isoformat()) for s in statuses] == [
        ("site-day", "10 tokens", "10 tokens", 100, "2026-12-04T00:00:00+00:00")]


async def test_no_statement_runs_when_no_budget_or_limit_applies(clock):
    model = ScriptedModel([tool_step(("c1", "ping", {}), usage=(5, 5)), text_step("done", usage=(5, 5))])
    agent = spender(model, clock, [{"id": "bob-only", "scope": "resource", "match": "bob", "unit": "tokens",
                                    "limit": 1}])
    from asgiref.sync import sync_to_async

    await sync_to_async(admin_budgets)()  # the admin's budgets, read once per MASTRA_BUDGETS_CACHE_S
    with statements() as seen:
        result = await agent.generate("go", max_steps=5, **as_alice())
    assert result.text == "done"
    assert [s for s in seen if "budget" in s or "activerun" in s] == []


async def test_a_run_over_the_concurrency_limit_is_refused_before_its_call_and_the_slot_frees_at_the_end(clock, settings):
    import asyncio

    from asgiref.sync import sync_to_async

    from budgets.models import ActiveRunSlot

    settings.MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE = 1
    clock.now = datetime.now(timezone.utc)  # slots expire by the real clock's database rows
    slow_model = ScriptedModel([text_step("slow", delay=0.5)])
    quick_model = ScriptedModel([text_step("quick"), text_step("after")])
    slow = Agent(id="slow", instructions="x", model=slow_model)
    quick = Agent(id="quick", instructions="x", model=quick_model)
    Mastra(agents={"slow": slow, "quick": quick}, policy=DatabaseRunPolicy(now=clock))
    first = asyncio.ensure_future(slow.generate("a", **as_alice()))
    while not slow_model.calls:
        await asyncio.sleep(0.01)
    refused = await quick.generate("b", **as_alice())
    assert (refused.error.code, quick_model.calls) == ("too_many_active_runs", 0)
    assert refused.error.details == {"scope": "resource", "limit": 1, "active": 1}
    assert str(refused.error) == "resource 'alice' already has 1 active run(s), its limit; send again when one ends"
    assert (await first).text == "slow"
    assert await sync_to_async(ActiveRunSlot.objects.count)() == 0
    assert (await quick.generate("c", **as_alice())).text == "quick"
    # another resource was never limited by alice's runs
    assert (await quick.generate("d", request_context={RESOURCE_ID_KEY: "bob"})).text == "after"



async def title_of(memory) -> str:
    assert await title_drain()
    return (await memory.store.get_thread(resource_id="alice", thread_id="t1"))["title"]


def titled(model, clock, budgets):
    memory = InMemoryMemory(generate_title=True)
    agent = Agent(id="spender", instructions="Spend.", model=model, memory=memory)
    Mastra(agents={"spender": agent}, policy=DatabaseRunPolicy(now=clock), budgets=list(budgets))
    return agent, memory


async def test_a_threads_title_is_counted_against_its_runs_budgets_and_takes_no_slot(clock, settings):
    settings.MASTRA_MAX_ACTIVE_RUNS_PER_RESOURCE = 1
    clock.now = datetime.now(timezone.utc)  # slots expire by the real clock's database rows
    model = ScriptedModel([text_step("Sure.", usage=(40, 10)), text_step("Trip to Lagos", usage=(30, 5)),
                           text_step("Booked.", usage=(1, 1))])
    agent, memory = titled(model, clock, [{"id": "alice-day", "scope": "resource", "unit": "tokens", "limit": 1000}])
    assert (await agent.generate("Plan a trip to Lagos", memory={"resource": "alice", "thread": "t1"})).text == "Sure."
    assert await title_of(memory) == "Trip to Lagos"
    assert [(b, who, int(s)) for b, who, _, s, _ in await counters()] == [("alice-day", "alice", 85)]
    # the title held no active-run slot: alice's next run is not refused by the limit of 1
    assert (await agent.generate("Book it", memory={"resource": "alice", "thread": "t1"})).text == "Booked."


async def test_a_spent_hard_budget_leaves_the_title_to_the_first_message(clock, caplog):
    model = ScriptedModel([text_step("Sure.", usage=(100, 0)), text_step("never asked")])
    agent, memory = titled(model, clock, [{"id": "alice-day", "scope": "resource", "unit": "tokens", "limit": 100}])
    with caplog.at_level("INFO", logger="agents.runtime.agent.title"):
        await agent.generate("**Plan** a trip\nsoon", memory={"resource": "alice", "thread": "t1"})
        assert await title_of(memory) == "Plan a trip"
    assert model.calls == 1
    assert [r.getMessage() for r in caplog.records if r.name == "agents.runtime.agent.title"] == [
        "the title of thread t1 is made from its first message: budget 'alice-day' is spent (100 tokens of 100 "
        "tokens per day); it resets at 2026-12-04T00:00:00+00:00"]


async def test_a_soft_budget_a_title_spends_is_logged(clock, caplog):
    model = ScriptedModel([text_step("Sure.", usage=(90, 0)), text_step("Trip to Lagos", usage=(20, 0))])
    agent, memory = titled(model, clock, [{"id": "watch", "unit": "tokens", "limit": 100, "mode": "soft"}])
    with caplog.at_level("WARNING", logger="agents.runtime.run.spending"):
        result = await agent.generate("Plan a trip to Lagos", memory={"resource": "alice", "thread": "t1"})
        assert await title_of(memory) == "Trip to Lagos"
    assert [r.getMessage() for r in caplog.records if r.name == "agents.runtime.run.spending"] == [
        f"the thread title of run {result.run_id} spent a soft budget: Budget 'watch' is spent (110 tokens of 100 "
        "tokens per day); runs go on (a soft budget); it resets at 2026-12-04T00:00:00+00:00."]
