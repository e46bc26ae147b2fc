"""A spent budget in the browser: the chat page's card for the refused run and the dashboard's
budget row (a real server process on the test database, headless Chromium). Screenshots go to
test-output/screenshots/budget-*.png."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from budgets.models import Budget
from tests.chat.browser import chromium, daphne_server, orm, screenshot

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a-long-secret-9"


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path) as context:
        yield context


def test_a_spent_budget_is_a_card_in_the_chat_and_a_full_bar_on_the_dashboard(db_url_for_subprocess, tmp_path,
                                                                             browser):
    orm(lambda: get_user_model().objects.create_superuser("olga", password=PASSWORD))
    orm(lambda: Budget.objects.create(name="site-day", scope="site", period="day", unit="tokens", limit=Decimal(3),
                                      mode="hard"))
    with daphne_server(db_url_for_subprocess, tmp_path, MASTRA="tests.budgets.site:mastra") as base:
        page = browser.new_page()
        page.goto(base + "/")
        page.fill("input[name=username]", "olga")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("#conn-status[data-state=connected]")
        page.select_option("#agent-select", "echo")
        page.wait_for_selector("#conn-status[data-state=connected]")
        page.fill("#composer", "hello there, budget")
        page.press("#composer", "Enter")
        page.wait_for_function("() => [...document.querySelectorAll('.msg-assistant .md')]"
                               ".some((e) => e.innerText === 'echo: hello there, budget')")
        page.wait_for_selector("#running", state="hidden", timeout=20_000)
        page.fill("#composer", "one more")
        page.press("#composer", "Enter")
        card = page.wait_for_selector(".run-note.limit-card", timeout=20_000).inner_text()
        assert card.startswith("Budget reached: budget 'site-day' is spent (")
        assert "it resets at" in card
        assert page.locator(".run-note.limit-card .retry").count() == 0
        assert page.locator(".run-note.error-note").count() == 0  # the card, not a generic failure
        screenshot(page, "budget-chat-card-1280")
        page.reload()  # after a reload the stored refusal is the same card
        page.wait_for_selector("#conn-status[data-state=connected]")
        again = page.wait_for_selector(".run-note.limit-card", timeout=20_000)
        assert again.inner_text() == card
        page.goto(base + "/admin/")
        row = page.wait_for_selector("#dash-budgets")
        text = row.inner_text()
        assert "site-day (hard, per day)" in text and "of 3 tokens (100 %)" in text and "model calls refused" in text
        screenshot(page, "budget-dashboard-1280")
