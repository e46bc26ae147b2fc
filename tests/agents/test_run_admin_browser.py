"""The run's admin page in headless Chromium: the waterfall's bars sit on the time axis and a span
opens to its stored input and output. Screenshots: ``run-trace.png`` (closed) and
``run-trace-open.png`` (a tool span open) under ``test-output/screenshots/``."""

from datetime import datetime, timedelta, timezone

import pytest
from django.contrib.auth import get_user_model

from agents.models import Run
from agents.observability import Score, TraceSpan
from tests.admin_browser import admin_page, admin_sign_in, screenshot  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone.utc)


def stored_span(span_id, parent, start_ms, end_ms, type, name, **fields):
    return TraceSpan.objects.create(
        trace_id="a" * 32, span_id=span_id, parent_span_id=parent, run_id="run-1", name=name, type=type,
        started_at=T0 + timedelta(milliseconds=start_ms), ended_at=T0 + timedelta(milliseconds=end_ms),
        duration_ms=end_ms - start_ms, **fields)


def test_an_operator_reads_a_runs_waterfall_and_opens_a_span(live_server, admin_page):
    get_user_model().objects.create_superuser("root", "root@example.com", "correct horse")
    Run.objects.create(id="run-1", agent_id="ops-assistant", status="completed", steps=2, started_at=T0,
                       finished_at=T0 + timedelta(milliseconds=1600), step_models=["openai/gpt-4o", "openai/gpt-4o"],
                       usage={"input_tokens": 1830, "output_tokens": 112, "total_tokens": 1942})
    stored_span("s-run", "", 0, 1600, "agent_run", "agent run: 'ops-assistant'", attributes={"run_id": "run-1"},
                input=[{"role": "user", "content": "what is 12*7?"}])
    stored_span("s-step0", "s-run", 20, 820, "model_step", "step: 0",
                attributes={"provider": "openai", "model_id": "gpt-4o", "finish_reason": "tool-calls",
                            "usage": {"input_tokens": 880, "output_tokens": 40, "total_tokens": 920}},
                output={"text": "", "tool_calls": [{"toolName": "calculate", "args": {"expression": "12*7"}}]})
    stored_span("s-tool", "s-run", 830, 860, "tool_call", "tool: 'calculate'", input={"expression": "12*7"},
                output={"expression": "12*7", "value": 84})
    stored_span("s-step1", "s-run", 870, 1590, "model_step", "step: 1",
                attributes={"provider": "openai", "model_id": "gpt-4o", "finish_reason": "stop",
                            "usage": {"input_tokens": 950, "output_tokens": 72, "total_tokens": 1022}},
                output={"text": "12 × 7 = **84**.", "tool_calls": []})
    Score.objects.create(score_id="sc-1", run_id="run-1", agent_id="ops-assistant", scorer_key="answered",
                         scorer_id="answered", scorer_name="Answered", score=1.0, reason="a number was given",
                         created_at=T0 + timedelta(seconds=2))
    page = admin_page
    admin_sign_in(page, live_server.url, "root", "correct horse")
    page.goto(f"{live_server.url}/admin/agents/run/run-1/change/")
    assert page.locator("input[type=submit]").count() == 0
    assert page.locator(".wf-span").count() == 4
    track = page.locator("#span-s-tool .wf-track").bounding_box()
    bar = page.locator("#span-s-tool .wf-bar").bounding_box()
    # the tool ran from 830 to 860 ms of 1600: its bar starts at 51.9 % of the track, 1.9 % wide
    assert abs((bar["x"] - track["x"]) / track["width"] - 830 / 1600) < 0.01
    assert abs(bar["width"] / track["width"] - 30 / 1600) < 0.01
    assert page.inner_text("#run-usage .usage-total").split() == ["run", "total", "1830", "112", "—", "—", "1942"]
    assert page.inner_text("#run-scores .score td:first-child") == "Answered"
    assert not page.is_visible("#span-s-tool .wf-output")
    screenshot(page, "run-trace.png")
    page.click("#span-s-tool summary")
    assert page.is_visible("#span-s-tool .wf-output")
    assert page.inner_text("#span-s-tool .wf-input") == '{\n  "expression": "12*7"\n}'
    assert page.inner_text("#span-s-tool .wf-output") == '{\n  "expression": "12*7",\n  "value": 84\n}'
    page.locator("#run-trace").scroll_into_view_if_needed()
    screenshot(page, "run-trace-open.png")
