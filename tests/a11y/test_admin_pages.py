"""axe-core on the admin's editor page (an editable agent's change page) and its dashboard, at 1280
and 360 px: no serious or critical violation. Screenshots: ``test-output/screenshots/``."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from agents.editor.models import AgentDefinition
from tests.a11y.axe import assert_accessible
from tests.chat.browser import CHROMIUM, CHROMIUM_ARGS, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser_page(monkeypatch):
    # Playwright's sync API keeps an event loop on this thread; the test's own ORM calls are sync
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        yield page
        browser.close()


def test_the_admin_editor_page_has_no_serious_accessibility_violation(live_server, browser_page):
    User.objects.create_superuser("root", "root@example.com", "correct horse")
    page = browser_page
    page.goto(f"{live_server.url}/admin/login/")
    assert_accessible(page, "the admin login page")
    page.fill("#id_username", "root")
    page.fill("#id_password", "correct horse")
    page.click("input[type=submit]")
    page.wait_for_selector("#dashboard")
    assert_accessible(page, "the admin dashboard at 1280 px")
    for agent_id in ("ops-assistant", "policy-bot"):  # editable, and read-only (editor=False)
        definition = AgentDefinition.objects.get(agent_id=agent_id)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(f"{live_server.url}/admin/agents/agentdefinition/{definition.pk}/change/")
        page.wait_for_selector("#content-main")
        screenshot(page, f"a11y-editor-{agent_id}-1280")
        assert_accessible(page, f"the editor page of {agent_id} at 1280 px")
        page.set_viewport_size({"width": 360, "height": 740})
        screenshot(page, f"a11y-editor-{agent_id}-360")
        assert_accessible(page, f"the editor page of {agent_id} at 360 px")
    # with a saved version: the compare table's radio buttons, Publish, the Try it panel
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/admin/agents/agentdefinition/{AgentDefinition.objects.get(agent_id='ops-assistant').pk}/change/")
    page.fill("#id_instructions", "Answer in one sentence.")
    page.click("input[name=_save]")
    page.wait_for_selector("#version-1")
    screenshot(page, "a11y-editor-with-a-version-1280")
    assert_accessible(page, "the editor page with a version at 1280 px")
