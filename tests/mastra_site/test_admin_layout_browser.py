"""The admin's pages in headless Chromium, laid out for an operator: the dashboard's tables fit the
page when a run has failed with a long error, on a desktop and on a phone; the runs list shows a
failed run's error without scrolling; a schedule's cron expression and a span's duration read on one
line; the cost ledger's list shows a step's cost without scrolling. Screenshots: ``dashboard-1280.png``,
``dashboard-390.png``, ``runs-list-1280.png``, ``schedules-list-1280.png`` and ``ledger-list-1280.png``
under ``test-output/screenshots/``."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.models import Run, Thread
from agents.observability import TraceSpan
from ledger.writer import entries_write
from schedules.models import Schedule
from tests.admin_browser import admin_page, admin_sign_in, screenshot  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

#: a provider's refusal: the dashboard shows its first line's first 160 characters
ERROR = ("model_error: the provider answered 400: This model's maximum context length is 128000 tokens, "
         "however you requested 190233 tokens (190000 in your prompt; 233 for the completion).\n"
         "Please reduce the length of the messages.")

#: the lines an element's text takes: its text's boxes, those less than 8 pixels apart on one line
#: (a link around a span, or a code in smaller type, is two boxes on one line)
LINES = """(el) => {
  const tops = [], walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const r = document.createRange(); r.selectNodeContents(node);
    for (const rect of r.getClientRects()) if (rect.width) tops.push(rect.top);
  }
  tops.sort((a, b) => a - b);
  return tops.filter((top, i) => i === 0 || top - tops[i - 1] >= 8).length;
}"""

#: what the page measures: its width against the window's, each table's against its box, and the
#: labels, links and names that took more than one line
LAYOUT = """() => {
  const lines = ${LINES};
  const whole = '#dashboard .module th, #dashboard .module td a, #dashboard .module td code, #dashboard .module .whole';
  return {
    page: document.documentElement.scrollWidth, window: innerWidth,
    wider: [...document.querySelectorAll('#dashboard .module')].filter((m) => m.querySelector('table')
             && m.querySelector('table').getBoundingClientRect().width > m.clientWidth + 0.5)
           .map((m) => m.id).filter((id) => innerWidth >= 1000),
    broken: [...document.querySelectorAll(whole)].filter((e) => e.textContent.trim() && lines(e) > 1)
            .map((e) => e.textContent.trim()),
  };
}""".replace("${LINES}", LINES)


def test_the_dashboards_tables_fit_the_page_with_a_long_error(live_server, admin_page):
    get_user_model().objects.create_superuser("root", "root@example.com", "correct horse")
    now = timezone.now()
    Run.objects.create(id="run-context-too-long", agent_id="ops-assistant", status="failed", error_code="model_error",
                       error=ERROR, started_at=now - timedelta(minutes=5))
    entries_write([{"agent_id": "ops-assistant", "run_id": "run-context-too-long", "resource_id": "customer-success",
                    "provider": "openai", "model": "gpt-4o", "channel": "chat", "step_number": 0, "latency_ms": 1, "at": now,
                    "usage": {"inputTokens": 190000, "outputTokens": 0}}])
    page = admin_page
    admin_sign_in(page, live_server.url, "root", "correct horse")
    page.goto(f"{live_server.url}/admin/")
    assert page.inner_text("#dash-failed td.message") == "model_error " + ERROR.splitlines()[0][:160]
    assert page.inner_text("#dash-failed td:first-child") == "run-cont…"  # the whole id in its title
    assert page.inner_text("#dash-budgets td:first-child") == "daily-spend (hard, per day)"  # the demo's budget
    layout = page.evaluate(LAYOUT)
    # Django's own dashboard style (for the app list) kept each cell on one line: the error ran the
    # page out to about 1,460 pixels, and broke "scope" in two
    assert layout == {"page": 1280, "window": 1280, "wider": [], "broken": []}
    screenshot(page, "dashboard-1280.png")

    page.set_viewport_size({"width": 390, "height": 844})  # a phone: a wide table scrolls in its box
    layout = page.evaluate(LAYOUT)
    assert layout == {"page": 390, "window": 390, "wider": [], "broken": []}
    screenshot(page, "dashboard-390.png")


#: the lines of each cell of ``selector`` (a list page's column)
CELL_LINES = f"""(selector) => {{
  const lines = {LINES};
  return [...document.querySelectorAll(selector)].map((e) => [e.textContent.trim(), lines(e)]);
}}"""


def test_the_runs_list_shows_a_failed_runs_error_and_a_schedule_its_cron_and_a_span_its_time_on_one_line(live_server, admin_page):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "correct horse")
    now = timezone.now()
    thread = Thread.objects.create(resource_id="customer-success", thread_id="thread_a37a6163ee094631b040454d6f6fbe7f")
    Run.objects.create(id="b0396fc8-96d3-458d-8233-1bc266b923d0", agent_id="ops-assistant", thread=thread,
                       resource_id="customer-success", status="failed", finish_reason="error",
                       error_code="model_error", error=ERROR, started_at=now - timedelta(minutes=5),
                       finished_at=now - timedelta(minutes=5) + timedelta(seconds=3))
    TraceSpan.objects.create(trace_id="8d9fe27cee9b41788ee8fc19b5feac44", span_id="dc909744b6d5d241",
                             parent_span_id="", run_id="b0396fc8-96d3-458d-8233-1bc266b923d0",
                             name="agent run: 'ops-assistant'", type="agent_run", started_at=now,
                             ended_at=now + timedelta(milliseconds=24), duration_ms=24)
    Schedule.objects.create(id="agent_daily-digest", agent_id="ops-assistant", prompt="the digest",
                            cron="0 9 * * 1-5", next_fire_at=now + timedelta(hours=3), created_by=user,
                            created_at=now, updated_at=now)
    page = admin_page
    admin_sign_in(page, live_server.url, "root", "correct horse")

    page.goto(f"{live_server.url}/admin/agents/run/")
    # beside the admin's menu the list scrolls; the error is in its visible part, not past the edge
    box = page.locator(".results").bounding_box()
    error = page.locator("td.field-error_line").bounding_box()
    assert error["x"] + 200 < box["x"] + box["width"]
    assert page.inner_text("td.field-error_line").startswith("model_error model_error: the provider answered 400")
    assert page.evaluate(CELL_LINES, ".field-short_id, td.field-agent_id, td.field-status_line") == [
        ["b0396fc8…", 1], ["ops-assistant", 1], ["failed (error)", 1]]
    screenshot(page, "runs-list-1280.png")

    page.goto(f"{live_server.url}/admin/schedules/schedule/")
    # "0 9 *" over "* 1-5" would read as another expression
    assert page.evaluate(CELL_LINES, ".field-id, td.field-target, td.field-cron") == [
        ["agent_daily-digest", 1], ["ops-assistant", 1], ["0 9 * * 1-5", 1]]
    screenshot(page, "schedules-list-1280.png")

    page.goto(f"{live_server.url}/admin/agents/tracespan/")  # "24" over "ms" would be another figure
    assert page.evaluate(CELL_LINES, "td.field-type, td.field-run_link, td.field-took") == [
        ["agent_run", 1], ["b0396fc8…", 1], ["24 ms", 1]]


def test_the_ledger_list_shows_a_steps_cost_and_run_in_its_first_screen(live_server, admin_page):
    get_user_model().objects.create_superuser("root", "root@example.com", "correct horse")
    now = timezone.now()
    run_id = "b0396fc8-96d3-458d-8233-1bc266b923d0"
    Run.objects.create(id=run_id, agent_id="ops-assistant", resource_id="customer-success", status="completed",
                       started_at=now)
    entries_write([{"agent_id": "ops-assistant", "run_id": run_id, "resource_id": "customer-success",
                    "provider": "openai", "model": "gpt-4o", "channel": "chat", "step_number": 0, "latency_ms": 2345,
                    "at": now, "usage": {"inputTokens": 190000, "outputTokens": 233, "cachedInputTokens": 1024}}])
    page = admin_page
    admin_sign_in(page, live_server.url, "root", "correct horse")
    page.goto(f"{live_server.url}/admin/ledger/ledgerentry/")
    # thirteen columns beside the admin's menu: the cost is inside the list's visible part (it was
    # the twelfth column, after the four token counts' long headers: about 460 pixels past the edge)
    box = page.locator(".results").bounding_box()
    cost = page.locator("td.field-cost_text").bounding_box()
    assert cost["x"] + cost["width"] < box["x"] + box["width"]
    assert page.evaluate(CELL_LINES, "td.field-model_label, td.field-latency, td.field-run_link") == [
        ["openai/gpt-4o", 1], ["2.35 s", 1], ["b0396fc8…", 1]]
    assert page.get_attribute("td.field-run_link a", "title") == run_id
    screenshot(page, "ledger-list-1280.png")
