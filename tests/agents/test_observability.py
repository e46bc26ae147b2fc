"""Scores and trace spans on the database, and the admin page of a run that shows them."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.memory import Memory
from agents.models import Run, Score, TraceSpan
from agents.runtime import Agent, create_tool
from agents.runtime.scoring import create_scorer, scoring_drain
from agents.runtime.testing import ScriptedModel, text_step, tool_step


def polite():
    return create_scorer(id="polite", name="Polite",
                         generate_score=lambda ctx: 1 if "please" in str(ctx["run"]["output"]) else 0,
                         generate_reason=lambda ctx: "says please" if ctx["score"] else "no please")


def lookup():
    return create_tool(id="lookup", execute=lambda i: {"found": True})


@sync_to_async
def rows():
    return list(Score.objects.order_by("id")), list(TraceSpan.objects.order_by("started_at", "id"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_runs_scores_and_spans_are_stored():
    agent = Agent(id="bot", instructions="x", memory=Memory(), tools={"lookup": lookup()},
                  scorers={"polite": polite(), "broken": create_scorer(id="broken", generate_score=lambda c: 1 / 0)},
                  model=ScriptedModel([tool_step(("c1", "lookup", {})), text_step("Yes, please wait.")]))
    result = await agent.generate("find it", memory={"resource": "u1", "thread": "t1"})
    assert await scoring_drain()
    scores, spans = await rows()
    assert sorted((s.scorer_key, s.run_id, s.agent_id, s.thread_id, s.score, s.reason, s.error) for s in scores) == [
        ("broken", result.run_id, "bot", "t1", None, "",
         "scorer 'broken' failed in generate_score: ZeroDivisionError: division by zero"),
        ("polite", result.run_id, "bot", "t1", 1.0, "says please", "")]
    assert [(s.type, s.name, s.run_id) for s in spans] == [
        ("agent_run", "agent run: 'bot'", result.run_id), ("model_step", "step: 0", result.run_id),
        ("tool_call", "tool: 'lookup'", result.run_id), ("model_step", "step: 1", result.run_id)]
    assert {s.trace_id for s in spans} == {result.trace_id}
    assert spans[0].span_id == result.span_id and spans[2].parent_span_id == result.span_id
    assert spans[2].output == {"found": True}


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_sub_agents_spans_carry_its_own_run_id():
    helper = Agent(id="helper", instructions="x", model=ScriptedModel([text_step("ok")]))
    boss = Agent(id="boss", instructions="x", agents={"h": helper},
                 model=ScriptedModel([tool_step(("c1", "agent-h", {"prompt": "go"})), text_step("done")]))
    result = await boss.generate("go")
    _, spans = await rows()
    helper_run = next(s for s in spans if s.name == "agent run: 'helper'").attributes["run_id"]
    assert [(s.name, s.run_id == result.run_id, s.run_id == helper_run) for s in spans] == [
        ("agent run: 'boss'", True, False), ("step: 0", True, False), ("tool: 'agent-h'", True, False),
        ("agent run: 'helper'", False, True), ("step: 0", False, True), ("step: 1", True, False)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_run_admin_page_shows_its_scores_and_trace(admin_client):
    agent = Agent(id="bot", instructions="x", memory=Memory(), scorers={"polite": polite()},
                  model=ScriptedModel([text_step("no")]))
    result = await agent.generate("hi", memory={"resource": "u1", "thread": "t1"})
    await scoring_drain()
    page = (await sync_to_async(admin_client.get)(reverse("admin:agents_run_change", args=[result.run_id]))
            ).content.decode()
    assert '<tr class="score"><td>Polite</td><td>0.0</td><td>no please</td><td></td>' in page
    assert ('<span class="wf-label" style="padding-left: 0.0em" title="agent run: &#x27;bot&#x27;">agent run: '
            '&#x27;bot&#x27; <span class="wf-type">agent_run</span></span>') in page
    assert ('<span class="wf-label" style="padding-left: 1.2em" title="step: 0">step: 0 '
            '<span class="wf-type">model_step</span></span>') in page
    assert f"Trace <code>{result.trace_id}</code>: 2 spans over" in page
    for model in ("score", "tracespan"):
        listing = await sync_to_async(admin_client.get)(reverse(f"admin:agents_{model}_changelist"))
        assert listing.status_code == 200
    assert await sync_to_async(Run.objects.filter(pk=result.run_id).exists)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_thread_run_is_traced_and_scored_too():
    from tests.agents.thread_harness import bounded, make_agent, settle

    agent = make_agent("bot", scorers={"polite": polite()})
    try:
        r = await agent.send_message("please help", resource_id="u1", thread_id="t1")
        result = await bounded(r.output.get_full_output())
        assert await scoring_drain()
    finally:
        await settle()
    scores, spans = await rows()
    assert [(s.run_id, s.thread_id, s.score) for s in scores] == [(r.run_id, "t1", 1.0)]
    assert [(s.type, s.run_id) for s in spans] == [("agent_run", r.run_id), ("model_step", r.run_id)]
    assert spans[0].trace_id == result.trace_id
