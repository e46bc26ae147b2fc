"""Budgets in the runtime: the rules (agents.runtime.budgets) and the run policy seam, with the
in-process policy (agents.runtime.run_policy.MemoryRunPolicy)."""

from datetime import datetime, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from agents.runtime import Agent, AgentConfigError, InMemoryMemory, Mastra, create_tool
from agents.runtime.budgets import Budget, RunScope, budgets_check, period_bounds, period_key, step_amount
from agents.runtime.run_policy import MemoryRunPolicy
from agents.runtime.stored_messages import to_model_messages
from agents.runtime.testing import ScriptedModel, text_step, tool_step


NOW = datetime(2026, 12, 3, 10, 0, tzinfo=timezone.utc)
ping = create_tool(id="ping", description="Ping.", input_schema={"type": "object"}, execute=lambda i: {"ok": True})


def site(budgets, policy=None, *, model, memory=False):
    agent = Agent(id="bot", instructions="Be brief.", model=model, tools={"ping": ping},
                  memory=InMemoryMemory() if memory else None)
    policy = policy or MemoryRunPolicy(now=lambda: NOW)
    Mastra(agents={"bot": agent}, policy=policy, budgets=budgets)
    return agent, policy


def chunks_of(kind):
    seen = []
    return seen, (lambda chunk: seen.append(chunk) if chunk["type"] == kind else None)


# -- the rules ------------------------------------------------------------------------------------
def test_budgets_are_checked_and_name_the_field():
    assert budgets_check([{"id": "d", "limit": "1.5"}]) == (Budget(id="d", limit=Decimal("1.5")),)
    for bad, field in [({"id": "", "limit": 1}, "budgets[0].id"), ({"id": "d", "limit": 0}, "budgets[0].limit"),
                       ({"id": "d", "limit": 1.5, "unit": "tokens"}, "budgets[0].limit"),
                       ({"id": "d", "limit": 1, "scope": "team"}, "budgets[0].scope"),
                       ({"id": "d", "limit": 1, "match": "alice"}, "budgets[0].match"),
                       ({"id": "d", "limit": 1, "extra": 1}, "budgets[0]")]:
        with pytest.raises(AgentConfigError) as caught:
            budgets_check([bad])
        assert caught.value.field == field
    with pytest.raises(AgentConfigError, match="two budgets share the id 'd'"):
        budgets_check([{"id": "d", "limit": 1}, {"id": "d", "limit": 2}])
    with pytest.raises(AgentConfigError, match="need a policy"):
        Mastra(budgets=[{"id": "d", "limit": 1}])


def test_a_day_starts_at_midnight_in_the_time_zone_and_lasts_23_hours_on_a_dst_day():
    paris = ZoneInfo("Europe/Paris")
    start, end = period_bounds("day", datetime(2026, 3, 29, 12, 0, tzinfo=timezone.utc), paris)
    assert (start.isoformat(), end.isoformat()) == ("2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00")
    assert (end.astimezone(timezone.utc) - start.astimezone(timezone.utc)).total_seconds() == 23 * 3600
    # 23:30 UTC on the 3rd is already the 4th in Paris
    assert period_key("day", datetime(2026, 12, 3, 23, 30, tzinfo=timezone.utc), paris, "r") == "2026-12-04"
    assert period_key("month", datetime(2026, 12, 31, 23, 30, tzinfo=timezone.utc), paris, "r") == "2027-01"
    assert period_key("run", NOW, paris, "run-9") == "run:run-9"
    start, end = period_bounds("month", datetime(2026, 12, 15, tzinfo=timezone.utc), ZoneInfo("UTC"))
    assert (start.isoformat(), end.isoformat()) == ("2026-12-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00")


def test_scopes_each_count_their_own_and_match_picks_one():
    alice = RunScope(run_id="r1", agent_id="bot", resource_id="alice", channel="chat")
    each = Budget(id="u", limit=Decimal(5), scope="resource")
    only_bob = Budget(id="b", limit=Decimal(5), scope="resource", match="bob")
    assert each.applies_to(alice) and each.counter_key(alice) == "u|resource|alice"
    assert not only_bob.applies_to(alice)
    assert not each.applies_to(RunScope(run_id="r2", agent_id="bot"))  # no resource: not a resource's spend
    assert Budget(id="c", limit=Decimal(1), scope="channel", match="chat").applies_to(alice)
    assert step_amount(Budget(id="t", limit=Decimal(9), unit="tokens"), usage={"input_tokens": 7, "output_tokens": 3},
                       cost=None) == 10
    assert step_amount(Budget(id="c", limit=Decimal(9)), usage={"input_tokens": 7}, cost=None) is None


# -- the run policy seam ----------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_a_hard_budget_stops_the_run_before_the_call_that_would_exceed_it():
    model = ScriptedModel([tool_step(("c1", "ping", {}), usage=(60, 20)), tool_step(("c2", "ping", {}), usage=(60, 20)),
                           text_step("never asked")])
    agent, policy = site([{"id": "daily-tokens", "limit": 100, "unit": "tokens"}], model=model)
    errors, on_chunk = chunks_of("error")
    result = await agent.generate("go", max_steps=5, on_chunk=on_chunk)
    assert model.calls == 2  # the second step was allowed at 80 of 100; the third call was never made
    assert result.finish_reason == "error"
    assert result.error.code == "budget_exceeded"
    assert result.error.details == {"budget": "daily-tokens", "scope": "site", "match": "", "period": "day",
                                    "unit": "tokens", "limit": "100", "spent": "160",
                                    "resetsAt": "2026-12-04T00:00:00+00:00"}
    assert str(result.error) == ("budget 'daily-tokens' is spent (160 tokens of 100 tokens per day); "
                                 "it resets at 2026-12-04T00:00:00+00:00")
    assert [c["payload"]["error"]["code"] for c in errors] == ["budget_exceeded"]
    # the next run is refused before its first call
    again = await agent.generate("again")
    assert (model.calls, again.error.code) == (2, "budget_exceeded")


@pytest.mark.asyncio
async def test_the_next_day_the_counter_starts_again():
    clock = [NOW]
    policy = MemoryRunPolicy(now=lambda: clock[0])
    model = ScriptedModel([text_step("one", usage=(90, 20)), text_step("two", usage=(1, 1))])
    agent, _ = site([{"id": "d", "limit": 100, "unit": "tokens"}], policy, model=model)
    assert (await agent.generate("a")).error is None
    assert (await agent.generate("b")).error.code == "budget_exceeded"
    clock[0] = datetime(2026, 12, 4, 0, 0, tzinfo=timezone.utc)  # the reset
    assert (await agent.generate("c")).text == "two"


@pytest.mark.asyncio
async def test_spend_is_counted_in_the_policys_clock_period_not_the_machines():
    policy = MemoryRunPolicy(now=lambda: datetime(2001, 5, 6, 7, 0, tzinfo=timezone.utc))
    agent, _ = site([{"id": "d", "limit": 100, "unit": "tokens"}], policy, model=ScriptedModel([text_step("hi", usage=(3, 4))]))
    await agent.generate("a")
    assert policy.spent == {("d|site|", "2001-05-06"): Decimal(7)}


@pytest.mark.asyncio
async def test_a_soft_budget_lets_runs_go_on_and_posts_one_notice_per_period():
    model = ScriptedModel([text_step("a", usage=(80, 30)), text_step("b", usage=(80, 30)), text_step("c", usage=(1, 1))])
    agent, _ = site([{"id": "watch", "limit": 100, "unit": "tokens", "mode": "soft"}], model=model, memory=True)
    notices, on_chunk = chunks_of("data-budget-notice")
    for text in ("a", "b", "c"):
        result = await agent.generate("go", memory={"resource": "alice", "thread": "t1"}, on_chunk=on_chunk)
        assert (result.error, result.text) == (None, text)
    assert [c["data"]["budget"] for c in notices] == ["watch"]
    assert notices[0]["data"]["message"] == ("Budget 'watch' is spent (110 tokens of 100 tokens per day); runs go on "
                                             "(a soft budget); it resets at 2026-12-04T00:00:00+00:00.")
    stored = (await agent.memory.store.list_messages(resource_id="alice", thread_id="t1"))
    kept = [m["content"]["metadata"]["notice"]["budget"] for m in stored
            if m["role"] == "assistant" and (m["content"].get("metadata") or {}).get("notice")]
    assert kept == ["watch"]
    # the notice is for the thread's readers: the model never sees it
    assert all(not (m.get("metadata") or {}).get("notice") for m in to_model_messages(stored))
    assert [m["role"] for m in to_model_messages(stored)] == ["user", "assistant"] * 3


@pytest.mark.asyncio
async def test_a_per_run_budget_stops_one_run_only():
    model = ScriptedModel([tool_step(("c1", "ping", {}), usage=(50, 10)), tool_step(("c2", "ping", {}), usage=(1, 1)),
                           text_step("fresh run", usage=(50, 10))])
    agent, _ = site([{"id": "per-run", "limit": 50, "unit": "tokens", "period": "run"}], model=model)
    first = await agent.generate("loop", max_steps=5)
    assert (model.calls, first.error.code, first.error.details["resetsAt"]) == (1, "budget_exceeded", None)
    assert "it does not reset (a per-run budget)" in str(first.error)
    assert (await agent.generate("next")).text == "fresh run"


@pytest.mark.asyncio
async def test_a_refused_thread_run_keeps_the_message_and_says_why_in_the_thread():
    model = ScriptedModel([text_step("spent it", usage=(100, 0))])
    agent, _ = site([{"id": "d", "limit": 100, "unit": "tokens"}], model=model, memory=True)
    await agent.generate("first", memory={"resource": "alice", "thread": "t1"})
    refused = await agent.generate("second", memory={"resource": "alice", "thread": "t1"})
    assert refused.error.code == "budget_exceeded"
    stored = await agent.memory.store.list_messages(resource_id="alice", thread_id="t1")
    last_two = stored[-2:]
    assert last_two[0]["role"] == "user" and "second" in str(last_two[0]["content"])
    assert last_two[1]["content"]["metadata"]["error"]["code"] == "budget_exceeded"


@pytest.mark.asyncio
async def test_a_site_without_a_policy_calls_none():
    model = ScriptedModel([text_step("hi", usage=(10**9, 0))])
    agent = Agent(id="bot", instructions="x", model=model)
    Mastra(agents={"bot": agent})
    assert (await agent.generate("a")).text == "hi"
