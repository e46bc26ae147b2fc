"""The run's admin page: token usage per step, scores, and the trace as a waterfall (spans on a time
axis, each opening to its stored input and output)."""

from __future__ import annotations

import re

from datetime import datetime, timedelta, timezone

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.memory import Memory
from agents.observability import TraceSpan
from agents.runtime import Agent, create_tool
from agents.runtime.scoring import create_scorer, scoring_drain
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from agents.trace_waterfall import json_text, tree_order, waterfall_build

T0 = datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone.utc)


def span(span_id: str, parent: str, start_ms: int, end_ms: int | None, *, type: str = "model_step",
         name: str | None = None, **fields) -> TraceSpan:
    return TraceSpan(trace_id="t" * 32, span_id=span_id, parent_span_id=parent, name=name or span_id, type=type,
                     started_at=T0 + timedelta(milliseconds=start_ms),
                     ended_at=None if end_ms is None else T0 + timedelta(milliseconds=end_ms),
                     duration_ms=None if end_ms is None else end_ms - start_ms, **fields)


def test_spans_are_placed_on_the_trace_time_axis_under_their_parents():
    spans = [span("step1", "run", 500, 1000), span("tool", "run", 400, 500, type="tool_call"),
             span("run", "", 0, 1000, type="agent_run"), span("step0", "run", 0, 400),
             span("sub", "tool", 420, 420, type="agent_run")]
    waterfall = waterfall_build(spans)
    assert waterfall.total_ms == 1000
    assert [(r.span.span_id, r.depth, r.offset_pct, r.width_pct, r.duration_ms) for r in waterfall.rows] == [
        ("run", 0, 0.0, 100.0, 1000), ("step0", 1, 0.0, 40.0, 400), ("tool", 1, 40.0, 10.0, 100),
        ("sub", 2, 42.0, 0.4, 0),  # a span of 0 ms stays visible
        ("step1", 1, 50.0, 50.0, 500)]
    assert waterfall.ticks == ((0.0, "0 ms"), (25.0, "250 ms"), (50.0, "500 ms"), (75.0, "750 ms"),
                               (100.0, "1.00 s"))


def test_a_span_whose_parent_is_not_stored_is_a_root_and_a_cycle_is_shown_once():
    spans = [span("a", "b", 0, 10), span("b", "a", 5, 10), span("c", "gone", 2, 4)]
    assert [(s.span_id, depth) for s, depth in tree_order(spans)] == [("c", 0)]  # a and b only name each other
    assert waterfall_build([]) is None


def test_a_long_input_is_clipped_with_a_note():
    text = json_text({"text": "x" * 100}, limit=20)
    assert text == '{\n  "text": "xxxxxxx\n… (96 more characters)'


def polite():
    return create_scorer(id="polite", name="Polite",
                         generate_score=lambda ctx: 1 if "please" in str(ctx["run"]["output"]) else 0,
                         generate_reason=lambda ctx: "says please" if ctx["score"] else "no please")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_run_page_shows_usage_per_step_scores_and_the_waterfall(admin_client):
    lookup = create_tool(id="lookup", execute=lambda i: {"found": i["q"]})
    agent = Agent(id="bot", instructions="x", memory=Memory(), tools={"lookup": lookup}, scorers={"polite": polite()},
                  model=ScriptedModel([tool_step(("c1", "lookup", {"q": "<b>"}), usage=(12, 3)),
                                       text_step("Found it, please wait.", usage={"inputTokens": 30,
                                                                                  "outputTokens": 6,
                                                                                  "cachedInputTokens": 8})]))
    result = await agent.generate("find <b>", memory={"resource": "u1", "thread": "t1"})
    await scoring_drain()
    response = await sync_to_async(admin_client.get)(reverse("admin:agents_run_change", args=[result.run_id]))
    page = response.content.decode()
    assert response.status_code == 200 and 'name="_save"' not in page
    # the thread once, as a link to its page, where the model's field would be
    labels = re.findall(r'<label>([^<]*)</label>', page)
    assert labels[:6] == ["Id:", "Agent id:", "Resource id:", "Thread:", "Status:", "Finish reason:"]
    assert labels.count("Thread:") == 1 and f'href="{reverse("admin:agents_thread_changelist")}' in page
    assert ('<tr class="usage-step"><td>step: 0</td><td>test/scripted</td><td>tool-calls</td>'
            '<td class="num">12</td><td class="num">3</td><td class="num">—</td><td class="num">—</td>'
            '<td class="num">15</td></tr>') in page
    assert ('<tr class="usage-step"><td>step: 1</td><td>test/scripted</td><td>stop</td>'
            '<td class="num">30</td><td class="num">6</td><td class="num">—</td><td class="num">8</td>'
            '<td class="num">36</td></tr>') in page
    assert ('<tr class="usage-total"><th colspan="3">run total</th><td class="num"><strong>42</strong></td>'
            '<td class="num"><strong>9</strong></td>') in page
    assert '<tr class="score"><td>Polite</td><td>1.0</td><td>says please</td><td></td>' in page
    spans = await sync_to_async(lambda: list(TraceSpan.objects.order_by("started_at", "id")))()
    assert [s.type for s in spans] == ["agent_run", "model_step", "tool_call", "model_step"]
    assert page.count('<details class="wf-span') == 4
    tool = spans[2]
    assert f'<details class="wf-span wf-tool_call" id="span-{tool.span_id}">' in page
    # the stored input and output, escaped
    assert '<pre class="wf-input">{\n  &quot;q&quot;: &quot;&lt;b&gt;&quot;\n}</pre>' in page
    assert '<pre class="wf-output">{\n  &quot;found&quot;: &quot;&lt;b&gt;&quot;\n}</pre>' in page
    assert f"Trace <code>{result.trace_id}</code>: 4 spans over" in page
