"""The webhook endpoint admin in headless Chromium: an operator creates an endpoint from lists,
generates its secret, reads the URL to paste into GitHub, meets a form error, and sees a refused
delivery with its reason. Screenshots: ``webhook-endpoint-new.png``, ``webhook-endpoint-errors.png``,
``webhook-endpoint.png`` under ``test-output/screenshots/``."""

import re
import urllib.error
import urllib.request

import pytest
from django.contrib.auth import get_user_model

from inbox.models import WebhookEndpoint
from tests.admin_browser import admin_page, admin_sign_in, screenshot  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_operator_sets_up_an_endpoint_and_sees_what_was_refused(live_server, admin_page):
    users = get_user_model().objects
    users.create_superuser("root", "root@example.com", "correct horse")
    users.create_user("alice", password="pw")
    page = admin_page
    admin_sign_in(page, live_server.url, "root", "correct horse")
    page.goto(f"{live_server.url}/admin/inbox/webhookendpoint/add/")
    page.fill("#id_name", "ops")
    page.select_option("#id_source", "github")
    assert page.inner_text("#webhook-url") == f"{live_server.url}/api/webhooks/github/ops"
    assert page.locator("#id_agent_id option").all_inner_texts() == ["---------", "Echo (echo)", "Slow (slow)"]
    page.select_option("#id_agent_id", "echo")
    page.select_option("#id_resource_id", "alice")
    assert page.get_attribute("#id_new_secret", "type") == "password"
    page.click("#generate-secret")
    secret = page.input_value("#generated-secret")
    assert re.fullmatch(r"[0-9a-f]{64}", secret) and page.input_value("#id_new_secret") == secret
    page.select_option("#id_priority_ci_status", "urgent")
    page.fill("#id_thread_template", "github:{repo}")
    screenshot(page, "webhook-endpoint-new.png")
    page.click("input[name=_continue]")
    page.wait_for_selector(".errornote")
    assert page.inner_text(".field-thread_template .errorlist") == (
        "Unknown placeholder {repo}: use {source}, {repository}, {branch}, {number}, {channel}, {user}.")
    screenshot(page, "webhook-endpoint-errors.png")
    assert page.input_value("#id_new_secret") == ""  # the password field never comes back filled in
    assert page.inner_text(".field-secret_status .readonly") == "not set"
    page.fill("#id_thread_template", "github:{repository}")
    page.click("#generate-secret")
    secret = page.input_value("#generated-secret")
    page.click("input[name=_continue]")
    page.wait_for_selector(".messagelist .success")

    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.secret, endpoint.agent_id, endpoint.resource_id, endpoint.priority_rules) == (
        secret, "echo", "alice", {"ci-status": "urgent"})
    assert page.inner_text("#webhook-url") == f"{live_server.url}/api/webhooks/github/ops"
    assert secret not in page.content()

    request = urllib.request.Request(f"{live_server.url}/api/webhooks/github/ops", data=b'{"zen": "hi"}', headers={
        "Content-Type": "application/json", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-forged",
        "X-Hub-Signature-256": "sha256=" + "0" * 64})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    page.reload()
    row = page.locator("#recent-refusals tr.refusal")
    assert row.count() == 1
    assert row.locator("td").all_inner_texts()[1:] == [
        "401", "invalid_signature", "1", "the X-Hub-Signature-256 signature does not match", "d-forged"]
    screenshot(page, "webhook-endpoint.png")
