"""axe-core on the admin's login, dashboard and editor pages (an editable agent's and a read-only
agent's change page, and one with a saved version), at 1280 and 360 px: no serious or critical
violation. A real daphne serves the demo site. Screenshots: ``test-output/screenshots/``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from agents.editor.models import AgentDefinition
from tests.a11y.axe import assert_accessible
from tests.chat.browser import chromium, daphne_server, orm, screenshot

pytestmark = pytest.mark.django_db(transaction=True)

DEMO = {"MASTRA": "mastra_site.mastra:mastra", "MASTRA_DEFAULT_MODEL": "local/echo"}


def test_the_admin_editor_page_has_no_serious_accessibility_violation(db_url_for_subprocess, tmp_path):
    orm(lambda: User.objects.create_superuser("root", "root@example.com", "correct horse"))
    pks = orm(lambda: dict(AgentDefinition.objects.values_list("agent_id", "pk")))
    with daphne_server(db_url_for_subprocess, tmp_path, **DEMO) as base, chromium(tmp_path) as browser:
        page = browser.new_page()
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(f"{base}/admin/login/")
        assert_accessible(page, "the admin login page")
        page.fill("#id_username", "root")
        page.fill("#id_password", "correct horse")
        page.click("input[type=submit]")
        page.wait_for_selector("#dashboard")
        assert_accessible(page, "the admin dashboard at 1280 px")
        for agent_id in ("ops-assistant", "policy-bot"):  # editable, and read-only (editor=False)
            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto(f"{base}/admin/agents/agentdefinition/{pks[agent_id]}/change/")
            page.wait_for_selector("#content-main")
            screenshot(page, f"a11y-editor-{agent_id}-1280")
            assert_accessible(page, f"the editor page of {agent_id} at 1280 px")
            page.set_viewport_size({"width": 360, "height": 740})
            screenshot(page, f"a11y-editor-{agent_id}-360")
            assert_accessible(page, f"the editor page of {agent_id} at 360 px")
        # with a saved version: the compare table's radio buttons, Publish, the Try it panel
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(f"{base}/admin/agents/agentdefinition/{pks['ops-assistant']}/change/")
        page.fill("#id_instructions", "Answer in one sentence.")
        page.click("input[name=_save]")
        page.wait_for_selector("#version-1")
        screenshot(page, "a11y-editor-with-a-version-1280")
        assert_accessible(page, "the editor page with a version at 1280 px")
