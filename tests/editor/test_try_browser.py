"""The editor's "Try it" panel and its roll back button in headless Chromium: the answer rendered as
markdown (DOM nodes, never HTML from the model), a tool call with its arguments and result, the
usage line; "Roll back to the code's definition" only while a version is published. Screenshots:
``editor-try-markdown.png``, ``editor-try-it.png``, ``editor-rollback.png`` under
``test-output/screenshots/``."""

import re

import pytest
from django.contrib.auth import get_user_model

from agents.editor.models import AgentDefinition, AgentVersion
from tests.admin_browser import admin_page, admin_sign_in, screenshot  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

PROMPT = "Say **bold**, `code`, [a link](https://example.com/) and <b>raw</b>"
TOOL_PROMPT = '/tool calculate {"expression": "2+3"}'


def test_try_it_renders_markdown_tools_and_usage_and_roll_back_follows_the_published_version(
        live_server, admin_page):
    get_user_model().objects.create_superuser("root", "root@example.com", "correct horse")
    page = admin_page
    admin_sign_in(page, live_server.url, "root", "correct horse")
    ops = AgentDefinition.objects.get(agent_id="ops-assistant")
    url = f"{live_server.url}/admin/agents/agentdefinition/{ops.pk}/change/"
    page.goto(url)
    assert page.locator("#rollback-code").count() == 0  # nothing published: the code runs

    page.fill("#try-prompt", PROMPT)
    page.click("#try-send")
    page.wait_for_selector("#try-output[data-done='1']")
    assert page.get_attribute("#try-output", "aria-busy") == "false"
    assert page.locator("#try-output strong").first.inner_text() == "bold"
    assert page.locator("#try-output code").first.inner_text() == "code"
    assert page.locator("#try-output b").count() == 0  # the model's HTML stays text
    assert "<b>raw</b>" in page.inner_text("#try-output")
    link = page.locator("#try-output a")
    assert (link.inner_text(), link.get_attribute("href"), link.get_attribute("rel")) == (
        "a link", "https://example.com/", "noopener noreferrer")
    assert page.locator("#try-tools .try-tool").count() == 0
    page.locator("#try-it").scroll_into_view_if_needed()
    screenshot(page, "editor-try-markdown.png")

    page.fill("#try-prompt", TOOL_PROMPT)
    page.click("#try-send")
    page.wait_for_selector("#try-output[data-done='1']")
    assert page.inner_text("#try-output") == 'echo: tool calculate returned {"expression": "2+3", "value": 5}'
    card = page.locator("#try-tools .try-tool")
    assert card.count() == 1
    assert card.locator("summary").inner_text() == "Tool calculate done"
    card.locator("summary").click()
    assert card.locator(".try-tool-args").inner_text() == 'args: {\n  "expression": "2+3"\n}'
    assert card.locator(".try-tool-result").inner_text() == 'result: {\n  "expression": "2+3",\n  "value": 5\n}'
    assert re.fullmatch(r"\d+ input · \d+ output · \d+ tokens · local/echo · \d+\.\d s",
                        page.inner_text("#try-usage"))
    page.locator("#try-it").scroll_into_view_if_needed()
    screenshot(page, "editor-try-it.png")

    page.fill("#id_instructions", "Answer in one sentence.")
    page.click("input[name=_save]")
    page.wait_for_selector("text=Saved v1 as a draft.")
    assert page.locator("#rollback-code").count() == 0  # a draft is not running
    page.click("#version-1 >> text=Publish")
    page.wait_for_selector("text=Published v1: the next runs use it.")
    assert page.locator("#rollback-code").count() == 1
    page.locator("#versions").scroll_into_view_if_needed()
    screenshot(page, "editor-rollback.png")
    page.click("#rollback-code input[type=submit]")
    page.wait_for_selector("text=Rolled back: v2 is published")
    assert AgentVersion.objects.get(status="published").overrides == {}
    assert page.locator("#rollback-code").count() == 0
