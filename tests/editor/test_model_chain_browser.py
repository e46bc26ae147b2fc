"""The model's fallback chain in the admin editor, in headless Chromium: the demo agent's chain is
edited (a bad model id first: a form error), published, and reaches the next run; an agent whose
code locks its model shows it read-only. Screenshots: ``editor-model-chain-error.png``,
``editor-model-chain.png``, ``editor-model-locked.png`` under ``test-output/screenshots/``."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model

from agents.editor.models import AgentDefinition, AgentVersion
from agents.registry import get_mastra
from tests.admin_browser import admin_page, admin_sign_in, screenshot  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_operator_edits_the_model_chain_and_the_next_run_uses_it(live_server, admin_page, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    get_user_model().objects.create_superuser("root", "root@example.com", "correct horse")
    page = admin_page
    admin_sign_in(page, live_server.url, "root", "correct horse")
    ops = AgentDefinition.objects.get(agent_id="ops-assistant")
    page.goto(f"{live_server.url}/admin/agents/agentdefinition/{ops.pk}/change/")
    assert page.inner_text("#lock-summary") == "instructions, tool descriptions, model"
    assert page.input_value("#id_model_0_id") == "local/echo"
    page.fill("#id_model_0_id", "gpt-4o")
    page.fill("#id_model_1_id", "local/echo")
    page.fill("#id_model_1_retries", "1")
    page.click("input[name=_save]")
    page.wait_for_selector("#model-row-0 .errorlist")
    assert page.inner_text("#model-row-0 .errorlist") == (
        "'gpt-4o' is not a model id; expected 'provider/model', e.g. 'openai/gpt-4o' (known providers: anthropic, "
        "google, local, openai).")
    assert not AgentVersion.objects.exists()
    page.locator("#field-model").scroll_into_view_if_needed()
    screenshot(page, "editor-model-chain-error.png")

    page.fill("#id_model_0_id", "openai/gpt-4o")
    page.fill("#id_model_0_retries", "0")
    page.click("input[name=_save]")
    page.wait_for_selector("text=Saved v1 as a draft.")
    page.click("#version-1 >> text=Publish")
    page.wait_for_selector("text=Published v1: the next runs use it.")
    assert AgentVersion.objects.get().overrides == {"model": [
        {"model": "openai/gpt-4o", "max_retries": 0, "enabled": True},
        {"model": "local/echo", "max_retries": 1, "enabled": True}]}
    assert page.input_value("#id_model_0_id") == "openai/gpt-4o"
    page.locator("#field-model").scroll_into_view_if_needed()
    screenshot(page, "editor-model-chain.png")

    # Playwright's loop runs on this thread: the run gets a thread and a loop of its own
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(asyncio.run, get_mastra().get_agent("ops-assistant").generate("hello")).result(30)
    assert [a["model"] for a in result.steps[0].attempts] == ["openai/gpt-4o"]  # no key: it fell back
    assert (result.text, result.models) == ("echo: hello", ["local/echo"])

    writer = AgentDefinition.objects.get(agent_id="support-writer")
    page.goto(f"{live_server.url}/admin/agents/agentdefinition/{writer.pk}/change/")
    assert page.locator("#id_model_0_id").count() == 0
    assert page.inner_text("#readonly-model") == "local/echo (retries 2)"
    assert page.inner_text("#field-model .lock-note").startswith("Read-only: locked by code")
    page.locator("#field-model").scroll_into_view_if_needed()
    screenshot(page, "editor-model-locked.png")
