"""The admin editor in headless Chromium: log in, edit an editable agent's instructions, publish,
try the published version, and find a locked agent read-only. Screenshots of the dashboard and
the edit page go to ``test-output/screenshots/``."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from agents.editor.models import AgentDefinition, AgentVersion
from agents.models import Run, ToolApproval
from ledger.writer import entries_write

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser_page(monkeypatch):
    # Playwright's sync API keeps an event loop on this thread; the test's own ORM calls are sync
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        yield page
        browser.close()


def test_an_operator_edits_publishes_and_meets_a_locked_agent(live_server, browser_page):
    SHOTS.mkdir(parents=True, exist_ok=True)
    User.objects.create_superuser("root", "root@example.com", "correct horse")
    now = timezone.now()
    for day, (ops, writer_tokens) in enumerate([(1200, 300), (800, 900), (1500, 0), (400, 650)]):
        for agent, run_id, tokens in (("ops-assistant", f"ops-{day}", ops), ("support-writer", f"writer-{day}",
                                                                             writer_tokens)):
            Run.objects.create(id=run_id, agent_id=agent, status="completed", started_at=now - timedelta(days=day),
                               usage={"total_tokens": tokens})
            # the dashboard's token chart reads the ledger's daily sums of the runs' steps
            entries_write([{"agent_id": agent, "run_id": run_id, "step_number": 0, "latency_ms": 1,
                            "at": now - timedelta(days=day), "usage": {"inputTokens": tokens, "outputTokens": 0}}])
    Run.objects.create(id="failed-1", agent_id="ops-assistant", status="failed", started_at=now,
                       error="model_error: the provider answered 429 (rate limited)")
    ToolApproval.objects.create(run_id="ops-0", agent_id="ops-assistant", tool_call_id="c1", tool_name="calculate",
                                args_hash="h", state={})
    page = browser_page
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "correct horse")
    page.click("input[type=submit]")
    page.wait_for_selector("#dashboard")
    assert page.inner_text("#dash-runs h3") == "RUNS BY STATUS"
    assert page.locator("#dash-usage svg rect").count() == 7  # one bar per agent per day with tokens
    assert "model_error: the provider answered 429" in page.inner_text("#dash-failed")
    page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)

    writer = AgentDefinition.objects.get(agent_id="support-writer")
    page.goto(f"{live_server.url}/admin/agents/agentdefinition/{writer.pk}/change/")
    assert page.input_value("#id_instructions").startswith("You draft short, friendly replies")
    page.fill("#id_instructions", "Answer in one sentence and sign as 'Ops'.")
    page.fill("#id_note", "shorter replies")
    page.click("input[name=_save]")
    page.wait_for_selector("text=Saved v1 as a draft.")
    page.screenshot(path=str(SHOTS / "edit-page.png"), full_page=True)
    page.click("#version-1 >> text=Publish")
    page.wait_for_selector("text=Published v1: the next runs use it.")
    version = AgentVersion.objects.get(agent=writer)
    assert (version.status, version.overrides, version.note, version.author_name) == (
        "published", {"instructions": "Answer in one sentence and sign as 'Ops'."}, "shorter replies", "root")
    assert page.inner_text("#version-1 .status-published") == "published"

    page.click("text=Compare A → B")
    page.wait_for_selector("#change-instructions")
    assert page.inner_text("#content-main h2") == "code → v1"
    assert "+Answer in one sentence and sign as 'Ops'." in page.inner_text("#change-instructions pre")
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
    page.go_back()

    page.fill("#try-prompt", "hello from the browser")
    page.click("#try-send")
    page.wait_for_selector("#try-output[data-done='1']")
    assert page.inner_text("#try-output") == "echo: hello from the browser"

    policy = AgentDefinition.objects.get(agent_id="policy-bot")
    page.goto(f"{live_server.url}/admin/agents/agentdefinition/{policy.pk}/change/")
    assert page.inner_text("#lock-summary") == "read-only"
    assert page.inner_text("#readonly-instructions").startswith("Quote the refund policy")
    assert page.locator("#editor-form textarea, #editor-form input[name=tools], input[name=_save]").count() == 0
    page.screenshot(path=str(SHOTS / "locked-page.png"), full_page=True)
