"""Threads, runs and approvals in the admin: read-only state, decisions through actions."""

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from django.utils import timezone

from agents.models import Run, Thread, ThreadInput, ToolApproval

pytestmark = pytest.mark.django_db(transaction=True)


def suspended_run(site) -> str:
    result = async_to_sync(site.get_agent("careful").generate)("/call wipe")
    assert result.finish_reason == "suspended"
    return result.run_id


@pytest.mark.parametrize("action, status", [("approve", "approved"), ("decline", "declined")])
def test_an_approval_action_continues_the_run(editor_admin_site, admin_client, action, status):
    run_id = suspended_run(editor_admin_site)
    approval = ToolApproval.objects.get(run_id=run_id)
    response = admin_client.post(reverse("admin:agents_toolapproval_changelist"),
                                 {"action": action, "_selected_action": [approval.pk]}, follow=True)
    assert f"1 tool call(s) {status}." in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == status
    run = Run.objects.get(id=run_id)
    assert (run.status, run.finish_reason) == ("completed", "stop")


def test_deciding_twice_reports_the_stale_approval(editor_admin_site, admin_client):
    run_id = suspended_run(editor_admin_site)
    approval = ToolApproval.objects.get(run_id=run_id)
    url = reverse("admin:agents_toolapproval_changelist")
    admin_client.post(url, {"action": "approve", "_selected_action": [approval.pk]})
    page = admin_client.post(url, {"action": "decline", "_selected_action": [approval.pk]}, follow=True)
    assert "0 tool call(s) declined." in page.content.decode()
    approval.refresh_from_db()
    assert approval.status == "approved"


def test_the_thread_page_shows_messages_queued_inputs_and_pending_approvals_read_only(admin_client):
    thread = Thread.objects.create(thread_id="t1", resource_id="u1")
    thread.messages.create(message_id="m1", resource_id="u1", role="user", content="hello there",
                           created_at=timezone.now())
    ThreadInput.objects.create(input_id="in-1", thread=thread, agent_id="bot", kind="queue", signal={})
    ThreadInput.objects.create(input_id="in-2", thread=thread, agent_id="bot", kind="queue", signal={},
                               status="consumed")
    Run.objects.create(id="run-1", agent_id="bot", thread=thread, status="suspended", started_at=timezone.now())
    ToolApproval.objects.create(run_id="run-1", agent_id="bot", tool_call_id="c1", tool_name="pay", args_hash="h",
                                state={})
    url = reverse("admin:agents_thread_change", args=["u1\x1ft1"])
    page = admin_client.get(url).content.decode()
    assert "hello there" in page and "in-1" in page and "in-2" not in page
    assert "1 pending" in page
    assert 'name="title"' not in page and 'name="messages-0-content"' not in page
    assert admin_client.post(url, {"title": "x"}).status_code == 403


def test_the_runs_list_shows_status_usage_steps_and_errors(admin_client):
    Run.objects.create(id="run-9", agent_id="bot", status="failed", steps=2, error="model_error: boom\ntrace",
                       usage={"total_tokens": 42}, started_at=timezone.now())
    page = admin_client.get(reverse("admin:agents_run_changelist"), {"status": "failed"}).content.decode()
    assert "run-9" in page and "model_error: boom" in page and "<td class=\"field-tokens\">42</td>" in page
