"""The operator dashboard in headless Chromium: its tables fit the page when a run has failed with a
long error, on a desktop and on a phone. Screenshots: ``dashboard-1280.png`` and
``dashboard-390.png`` under ``test-output/screenshots/``."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.models import Run
from ledger.writer import entries_write
from tests.admin_browser import admin_page, admin_sign_in, screenshot  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

#: a provider's refusal: the dashboard shows its first line's first 160 characters
ERROR = ("model_error: the provider answered 400: This model's maximum context length is 128000 tokens, "
         "however you requested 190233 tokens (190000 in your prompt; 233 for the completion).\n"
         "Please reduce the length of the messages.")

#: what the page measures: its width against the window's, each table's against its box, and the
#: labels, links and names that took more than one line
LAYOUT = """() => {
  const lines = (el) => { const r = document.createRange(); r.selectNodeContents(el); return r.getClientRects().length; };
  const whole = '#dashboard .module th, #dashboard .module td a, #dashboard .module td code, #dashboard .module .whole';
  return {
    page: document.documentElement.scrollWidth, window: innerWidth,
    wider: [...document.querySelectorAll('#dashboard .module')].filter((m) => m.querySelector('table')
             && m.querySelector('table').getBoundingClientRect().width > m.clientWidth + 0.5)
           .map((m) => m.id).filter((id) => innerWidth >= 1000),
    broken: [...document.querySelectorAll(whole)].filter((e) => e.textContent.trim() && lines(e) > 1)
            .map((e) => e.textContent.trim()),
  };
}"""


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
