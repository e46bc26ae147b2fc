"""The agents admin: runtime state read-only, changed only by actions that call the thread services."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.models import Run, Thread, ThreadInput, ThreadLease, ToolApproval

pytestmark = pytest.mark.django_db


T1 = "u1\x1ft1"  # the thread key of (u1, t1)


def held_thread(status: str = "running") -> ThreadLease:
    now = timezone.now()
    Thread.objects.create(thread_id="t1", resource_id="u1")
    Run.objects.create(id="run-1", agent_id="bot", thread_id=T1, started_at=now,
                       status="suspended" if status == "suspended" else "running")
    return ThreadLease.objects.create(thread_id=T1, agent_id="bot", owner_run_id="run-1", status=status, token=3,
                                      expires_at=None if status == "suspended" else now + timedelta(seconds=15))


def test_the_lease_page_shows_runtime_state_with_links_and_no_inputs(admin_client):
    lease = held_thread()
    page = admin_client.get(reverse("admin:agents_threadlease_change", args=[lease.pk])).content.decode()
    assert f'<a href="{reverse("admin:agents_run_change", args=["run-1"])}">run-1</a>' in page
    assert f'<a href="{reverse("admin:agents_thread_change", args=[T1])}">u1 / t1</a>' in page
    assert 'name="token"' not in page and 'name="owner_run_id"' not in page and 'name="status"' not in page
    listing = admin_client.get(reverse("admin:agents_threadlease_changelist")).content.decode()
    assert "run-1" in listing


def test_the_thread_page_shows_its_lease(admin_client):
    held_thread(status="suspended")
    page = admin_client.get(reverse("admin:agents_thread_change", args=[T1])).content.decode()
    assert "suspended" in page and f'{reverse("admin:agents_run_change", args=["run-1"])}' in page
    assert 'name="metadata"' not in page


@pytest.mark.parametrize("model", ["threadlease", "threadinput", "threadevent", "run", "toolapproval"])
def test_runtime_rows_cannot_be_added_or_deleted_by_hand(admin_client, model):
    assert admin_client.get(reverse(f"admin:agents_{model}_add")).status_code == 403
    page = admin_client.get(reverse(f"admin:agents_{model}_changelist")).content.decode()
    assert "delete_selected" not in page


@pytest.mark.parametrize("model", ["threadlease", "threadinput", "threadevent", "run", "toolapproval"])
def test_a_runtime_row_is_viewed_not_changed(admin_client, model):
    """The page of a row the admin only shows is titled "View …" and has no Save buttons."""
    held_thread()
    rows = {"threadlease": T1, "run": "run-1",
            "threadinput": ThreadInput.objects.create(input_id="i1", thread_id=T1, agent_id="bot", kind="queue",
                                                      signal={}).pk,
            "threadevent": None, "toolapproval": ToolApproval.objects.create(
                run_id="run-1", agent_id="bot", tool_call_id="c1", tool_name="pay", args_hash="h", state={}).pk}
    if model == "threadevent":
        from agents.models import ThreadEvent

        rows[model] = ThreadEvent.objects.create(thread_id=T1, seq=1, run_id="run-1", chunk={"type": "start"}).pk
    page = admin_client.get(reverse(f"admin:agents_{model}_change", args=[rows[model]])).content.decode()
    name = {"threadlease": "thread lease", "threadinput": "thread input", "threadevent": "thread event",
            "run": "run", "toolapproval": "tool approval"}[model]
    assert f"| View {name} | Mastra admin</title>" in page
    assert 'name="_save"' not in page and 'name="_continue"' not in page and "Change " + name not in page


def test_the_abort_action_ends_a_suspended_run_through_the_service(admin_client):
    lease = held_thread(status="suspended")
    ToolApproval.objects.create(run_id="run-1", agent_id="bot", tool_call_id="c1", tool_name="pay", args_hash="h",
                                state={})
    response = admin_client.post(reverse("admin:agents_threadlease_changelist"),
                                 {"action": "abort_runs", "_selected_action": [lease.pk]}, follow=True)
    assert "1 run(s) asked to abort." in response.content.decode()
    lease.refresh_from_db()
    assert (lease.status, lease.owner_run_id) == ("idle", None)
    assert Run.objects.get(id="run-1").status == "aborted"
    assert ToolApproval.objects.get(run_id="run-1").status == "declined"


def test_the_abort_action_flags_a_running_run(admin_client):
    lease = held_thread()
    response = admin_client.post(reverse("admin:agents_threadlease_changelist"),
                                 {"action": "abort_runs", "_selected_action": [lease.pk]}, follow=True)
    assert "1 run(s) asked to abort." in response.content.decode()
    lease.refresh_from_db()
    assert (lease.status, lease.owner_run_id, lease.abort_requested) == ("running", "run-1", True)


def test_the_cancel_action_cancels_only_waiting_inputs(admin_client):
    Thread.objects.create(thread_id="t1", resource_id="u1")
    rows = [ThreadInput.objects.create(input_id=f"i{n}", thread_id=T1, agent_id="bot", kind=kind, status=status,
                                       signal={})
            for n, (kind, status) in enumerate([("queue", "pending"), ("deliver", "consumed"), ("echo", "pending")])]
    response = admin_client.post(reverse("admin:agents_threadinput_changelist"),
                                 {"action": "cancel_inputs", "_selected_action": [r.pk for r in rows]}, follow=True)
    assert "1 input(s) cancelled." in response.content.decode()
    assert [r.status for r in ThreadInput.objects.order_by("id")] == ["cancelled", "consumed", "pending"]


@pytest.fixture
def staff_client(client, django_user_model):
    """A staff user who is not a superuser, with every permission of the agents app."""
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("alice", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="agents"))
    client.force_login(user)
    return client


def test_a_staff_user_cannot_strand_a_thread_with_forged_posts(staff_client):
    lease = held_thread()
    approval = ToolApproval.objects.create(run_id="run-1", agent_id="bot", tool_call_id="c1", tool_name="pay",
                                           args_hash="h", state={})
    waiting = ThreadInput.objects.create(input_id="i1", thread_id=T1, agent_id="bot", kind="queue", signal={})
    for model, pk, forged in [
        ("threadlease", lease.pk, {"owner_run_id": "", "token": "0", "status": "idle", "expires_at": ""}),
        ("toolapproval", approval.pk, {"status": "approved"}),
        ("threadinput", waiting.pk, {"status": "cancelled"}),
    ]:
        assert staff_client.get(reverse(f"admin:agents_{model}_change", args=[pk])).status_code == 200
        assert staff_client.post(reverse(f"admin:agents_{model}_change", args=[pk]), forged).status_code == 403
        assert staff_client.post(reverse(f"admin:agents_{model}_delete", args=[pk]), {"post": "yes"}).status_code == 403
        # not an action of these pages: nothing is deleted (the rows are checked below)
        staff_client.post(reverse(f"admin:agents_{model}_changelist"),
                          {"action": "delete_selected", "_selected_action": [pk], "post": "yes"})
    lease.refresh_from_db()
    assert (lease.owner_run_id, lease.token, lease.status) == ("run-1", 3, "running")
    assert ToolApproval.objects.get(pk=approval.pk).status == "pending"
    assert ThreadInput.objects.get(pk=waiting.pk).status == "pending"


def test_parked_inputs_are_listed_by_status(admin_client):
    Thread.objects.create(thread_id="t1", resource_id="u1")
    ThreadInput.objects.create(input_id="parked", thread_id=T1, agent_id="bot", kind="deliver", status="failed",
                               attempts=3, last_error="could not save the run's end: ValueError", signal={})
    ThreadInput.objects.create(input_id="fine", thread_id=T1, agent_id="bot", kind="deliver", status="consumed",
                               signal={})
    page = admin_client.get(reverse("admin:agents_threadinput_changelist"), {"status__exact": "failed"})
    content = page.content.decode()
    assert "?status__exact=failed" in content and "parked" in content and ">fine<" not in content
    detail = admin_client.get(reverse("admin:agents_threadinput_change",
                                      args=[ThreadInput.objects.get(input_id="parked").pk])).content.decode()
    assert "could not save the run&#x27;s end: ValueError" in detail
