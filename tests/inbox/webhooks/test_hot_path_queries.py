"""The SQL statements of a webhook delivery, pinned: a signed GitHub ``workflow_run`` failure,
verified, recorded once (replays are refused by its key) and stored as a notification (low, by the
endpoint's priority rules: nothing is sent now, so no run starts during the request)."""

from __future__ import annotations

import pytest

from tests.inbox.webhooks.conftest import fixture_bytes, github_signature, post
from tests.queries import statements

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_a_webhook_delivery(github_endpoint):
    github_endpoint.priority_rules = {"ci-status": "low"}
    await github_endpoint.asave()
    body = fixture_bytes("github", "workflow_run_failure")
    headers = {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": "d1",
               "X-Hub-Signature-256": github_signature(body)}
    with statements() as seen:
        response = await post("/api/webhooks/github/ops", body, headers)
    assert response.status_code == 200, response.content
    assert seen == [
        "SELECT inbox_webhookendpoint",  # the endpoint (its secret)
        "INSERT inbox_webhookdelivery",  # the delivery, once (a replay conflicts on its key)
        "SELECT agents_thread", "INSERT agents_thread",  # the thread, made on its first event
        # the group commit: records it may coalesce into, the thread's lease, the record
        "SELECT inbox_notificationrecord", "SELECT agents_threadlease", "INSERT inbox_notificationrecord",
        "UPDATE inbox_webhookdelivery",  # the delivery's outcome
    ]
