"""Thread titles: a model's answer cleaned, and a title made from the first message when the model
cannot write one (the offline ``local/echo``)."""

from __future__ import annotations

import pytest

from agents.runtime import Agent, InMemoryMemory, Mastra
from agents.runtime.agent.title import title_clean, title_drain, title_from_message
from agents.runtime.run_policy import MemoryRunPolicy
from agents.runtime.testing import ScriptedModel, text_step

MEM = {"resource": "user-1", "thread": "thread-1"}


@pytest.mark.parametrize("message, title", [
    ("hello ops", "hello ops"),
    ("  Where is   the\nrunbook?", "Where is the"),
    ("# **Deploy** the _new_ [API](https://example.com/api) now", "Deploy the new API now"),
    ('<notification source="github" kind="ci-status" priority="urgent">CI failed on main</notification>',
     "CI failed on main"),
    ("<system-reminder>remember the runbook</system-reminder>", "remember the runbook"),
    ('/tool calculate {"expression": "6*7"}', "Tool calculate"),
    ("/tool current-time", "Tool current-time"),
    ("```python\nprint(1)\n```", "print(1)"),
    ("\n\n> quoted *text*\nsecond line", "quoted text"),
    ("- first item\n- second item", "first item"),
    ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
    ("***both*** `code` ~~gone~~", "both code gone"),
    ("![chart](https://x/y.png) of the week", "chart of the week"),
    ("word " * 30, "word word word word word word word word word word word…"),
    ("a" * 80, "a" * 59 + "…"),
    ("", ""),
    ("<br/>", ""),
])
def test_a_title_is_made_from_the_first_message(message, title):
    assert title_from_message(message) == title


@pytest.mark.parametrize("answer, title", [
    ('  "Trip   to Lagos"  ', "Trip to Lagos"),
    ("**Weather** in _Lagos_\n", "Weather in Lagos"),
    ("# Plan: a trip", "Plan: a trip"),
    ("echo: <notification source=\"x\">CI failed</notification>", "echo: CI failed"),
])
def test_a_models_title_is_cleaned(answer, title):
    assert title_clean(answer) == title


async def wait_title(memory, thread_id: str = "thread-1") -> str:
    assert await title_drain()
    thread = await memory.store.get_thread(resource_id="user-1", thread_id=thread_id)
    return thread["title"] if thread else ""


@pytest.mark.asyncio
async def test_the_offline_model_is_not_asked_for_a_title():
    memory = InMemoryMemory(generate_title=True)
    agent = Agent(id="a", instructions="x", model="local/echo", memory=memory)
    result = await agent.generate("**Restart** the _billing_ API\nplease", memory=MEM)
    assert result.text == "echo: **Restart** the _billing_ API\necho: please"
    assert await wait_title(memory) == "Restart the billing API"


@pytest.mark.asyncio
async def test_a_model_that_writes_markdown_gets_a_clean_title():
    memory = InMemoryMemory(generate_title=True)
    model = ScriptedModel([text_step("Sure."), text_step("## **Trip** to _Lagos_")])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    await agent.generate("Plan a trip to Lagos", memory=MEM)
    assert await wait_title(memory) == "Trip to Lagos"


@pytest.mark.asyncio
async def test_a_model_whose_title_is_empty_gets_the_first_message():
    memory = InMemoryMemory(generate_title=True)
    model = ScriptedModel([text_step("Sure."), text_step("  **  ** ")])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    await agent.generate("Plan a trip to Lagos", memory=MEM)
    assert await wait_title(memory) == "Plan a trip to Lagos"


@pytest.mark.asyncio
async def test_a_title_is_counted_by_the_run_policy_and_skipped_when_a_hard_budget_is_spent():
    memory = InMemoryMemory(generate_title=True)
    model = ScriptedModel([text_step("Sure.", usage=(60, 0)), text_step("Trip to Lagos", usage=(30, 0)),
                           text_step("Done.", usage=(20, 0))])
    agent = Agent(id="a", instructions="x", model=model, memory=memory)
    policy = MemoryRunPolicy()
    Mastra(agents={"a": agent}, policy=policy, budgets=[{"id": "day", "unit": "tokens", "limit": 100}])
    await agent.generate("Plan a trip to Lagos", memory=MEM)
    assert await wait_title(memory) == "Trip to Lagos"
    assert list(policy.spent.values()) == [90]
    await agent.generate("Book it", memory={"resource": "user-1", "thread": "thread-2"})  # 110 of 100: spent
    assert (await wait_title(memory, "thread-2"), model.calls) == ("Book it", 3)
