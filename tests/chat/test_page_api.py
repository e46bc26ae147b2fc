"""The chat page's JSON beyond the basics: renaming and deleting threads, runs' figures (tokens,
duration, models), mark all read and the test notification, and the demo site's agents as the
picker lists them."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.models import Message, Run, Thread
from inbox.models import NotificationRecord

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def alice():
    return User.objects.create_user("alice", password="alice-secret-1")


@pytest.fixture
def bob():
    return User.objects.create_user("bob", password="bob-secret-1")


def patch(client, url, body, raw=None):
    return client.patch(url, data=raw if raw is not None else json.dumps(body), content_type="application/json")


# -- rename and delete -----------------------------------------------------------------------------
@pytest.mark.parametrize("thread_id", ["t1", "github:acme/app", "acme/app#12"])
def test_a_thread_is_renamed_and_its_title_cleared(client, alice, thread_id):
    Thread.objects.create(thread_id=thread_id, resource_id="alice", title="Old")
    client.force_login(alice)
    url = "/chat/api/threads/" + thread_id.replace("#", "%23")
    response = patch(client, url, {"title": "  Deploy\n notes  "})
    assert (response.status_code, response.json()) == (200, {"id": thread_id, "title": "Deploy notes"})
    assert Thread.objects.get(thread_id=thread_id).title == "Deploy notes"
    assert client.get("/chat/api/threads").json()["threads"][0]["title"] == "Deploy notes"
    assert patch(client, url, {"title": ""}).json() == {"id": thread_id, "title": ""}
    assert Thread.objects.get(thread_id=thread_id).title == ""


def test_rename_refuses_bad_titles_and_others_threads(client, alice, bob):
    Thread.objects.create(thread_id="t1", resource_id="alice", title="Mine")
    Thread.objects.create(thread_id="t-bob", resource_id="bob", title="Theirs")
    client.force_login(alice)
    cases = [
        (patch(client, "/chat/api/threads/t1", {"title": 3}), 400, "invalid_field", "title must be a string"),
        (patch(client, "/chat/api/threads/t1", {}), 400, "invalid_field", "title must be a string"),
        (patch(client, "/chat/api/threads/t1", {"title": "x" * 256}), 400, "invalid_field",
         "title is limited to 255 characters"),
        (patch(client, "/chat/api/threads/t1", None, raw="{not json"), 400, "invalid_json", None),
        (patch(client, "/chat/api/threads/t1", None, raw='{"title": "a\\u0000b"}'), 400, "invalid_text", None),
        (patch(client, "/chat/api/threads/t-bob", {"title": "mine now"}), 404, "thread_not_found",
         "thread 't-bob' not found"),
        (patch(client, "/chat/api/threads/nope", {"title": "x"}), 404, "thread_not_found", "thread 'nope' not found"),
    ]
    for response, status, code, message in cases:
        body = response.json()
        assert (response.status_code, body["code"]) == (status, code), body
        assert set(body) == {"error", "code", "message"}
        if message:
            assert body["message"] == message
    assert Thread.objects.get(thread_id="t-bob").title == "Theirs"
    assert Thread.objects.get(thread_id="t1").title == "Mine"
    assert client.get("/chat/api/threads/t1").status_code == 405


def test_a_thread_is_deleted_with_its_messages_and_only_the_callers(client, alice, bob):
    from agents.runtime.signal import create_signal, render_signal
    from agents.store import messages_save

    messages_save(resource_id="alice", thread_id="github:acme/app",
                  messages=[render_signal(create_signal({"type": "user", "contents": "hello"}))])
    Thread.objects.create(thread_id="github:acme/app", resource_id="bob")
    client.force_login(alice)
    response = client.delete("/chat/api/threads/github:acme/app")
    assert (response.status_code, response.json()) == (200, {"id": "github:acme/app", "deleted": True})
    assert list(Thread.objects.values_list("resource_id", "thread_id")) == [("bob", "github:acme/app")]
    assert Message.objects.count() == 0
    again = client.delete("/chat/api/threads/github:acme/app")
    assert (again.status_code, again.json()["code"]) == (404, "thread_not_found")
    client.logout()
    assert client.delete("/chat/api/threads/x").status_code == 401


# -- runs' figures ---------------------------------------------------------------------------------
def make_run(run_id, resource_id, *, seconds=None, **fields):
    started = timezone.now() - timedelta(minutes=5)
    return Run.objects.create(id=run_id, agent_id="chat-bot", resource_id=resource_id, started_at=started,
                              finished_at=started + timedelta(seconds=seconds) if seconds is not None else None,
                              **fields)


def test_runs_figures_are_the_callers_runs_in_camel_case(client, alice):
    make_run("r1", "alice", seconds=1.25, status="completed",
             usage={"input_tokens": 12, "output_tokens": 5, "total_tokens": 17, "cached_input_tokens": 2},
             step_models=["local/echo", "local/echo"])
    make_run("r2", "alice", status="running")
    make_run("r3", "bob", seconds=2, status="completed")
    client.force_login(alice)
    response = client.get("/chat/api/runs?id=r1&id=r2&id=r3&id=missing")
    assert response.json() == {"runs": [
        {"id": "r1", "agentId": "chat-bot", "status": "completed",
         "usage": {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17, "cachedInputTokens": 2},
         "durationMs": 1250, "models": ["local/echo", "local/echo"]},
        {"id": "r2", "agentId": "chat-bot", "status": "running", "usage": {}, "durationMs": None, "models": []}]}
    assert client.get("/chat/api/runs").json() == {"runs": []}
    too_many = client.get("/chat/api/runs?" + "&".join(f"id=r{n}" for n in range(101)))
    assert (too_many.status_code, too_many.json()["code"]) == (400, "invalid_query")
    nul = client.get("/chat/api/runs?id=a%00")
    assert (nul.status_code, nul.json()["code"]) == (400, "invalid_text")


# -- notifications ---------------------------------------------------------------------------------
def make_record(thread_id, resource_id, **fields):
    thread, _ = Thread.objects.get_or_create(thread_id=thread_id, resource_id=resource_id)
    return NotificationRecord.objects.create(agent_id="chat-bot", resource_id=resource_id, thread_id=thread.key,
                                             source="github", kind="ci-status",
                                             **{"summary": "CI failed", "created_at": timezone.now(),
                                                "updated_at": timezone.now(), **fields})


def test_mark_all_read_marks_the_callers_unread_records_seen(client, alice):
    pending = make_record("t1", "alice")
    delivered = make_record("t2", "alice", status="delivered")
    dismissed = make_record("t1", "alice", status="dismissed")
    theirs = make_record("t-bob", "bob")
    client.force_login(alice)
    before = client.get("/chat/api/notifications").json()
    assert (before["pending"], before["unread"]) == (1, 2)
    assert client.post("/chat/api/notifications/read-all").json() == {"changed": 2}
    statuses = {r.id: r.status for r in NotificationRecord.objects.all()}
    assert statuses == {pending.id: "seen", delivered.id: "seen", dismissed.id: "dismissed", theirs.id: "pending"}
    after = client.get("/chat/api/notifications").json()
    assert (after["pending"], after["unread"]) == (0, 0)
    assert [r["status"] for r in after["records"]] == ["seen", "seen"]
    assert client.post("/chat/api/notifications/read-all").json() == {"changed": 0}
    assert client.get("/chat/api/notifications/read-all").status_code == 405


@pytest.mark.django_db(transaction=True)
def test_the_test_notification_is_filed_into_the_callers_thread(client, alice, chat_site):
    client.force_login(alice)
    response = client.post("/chat/api/notifications/test", data={"agentId": "chat-bot", "threadId": "github:acme/app"},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    record = response.json()["record"]
    assert {k: record[k] for k in ("threadId", "agentId", "source", "kind", "priority", "status", "summary",
                                   "coalescedCount")} == {
        "threadId": "github:acme/app", "agentId": "chat-bot", "source": "chat", "kind": "test", "priority": "low",
        "status": "pending", "summary": "A test notification from the chat page", "coalescedCount": 1}
    stored = NotificationRecord.objects.get()
    assert (stored.id, stored.resource_id) == (record["id"], "alice")
    panel = client.get("/chat/api/notifications").json()
    assert (panel["pending"], panel["unread"], [r["id"] for r in panel["records"]]) == (1, 1, [record["id"]])


@pytest.mark.django_db(transaction=True)
def test_the_test_notification_refuses_bad_input(client, alice, chat_site):
    def post(body, raw=None):
        return client.post("/chat/api/notifications/test", data=raw if raw is not None else json.dumps(body),
                           content_type="application/json")

    assert post({"agentId": "chat-bot", "threadId": "t"}).status_code == 401
    client.force_login(alice)
    cases = [
        (post({"agentId": "chat-bot"}), 400, "invalid_field"),
        (post({"agentId": 3, "threadId": "t"}), 400, "invalid_field"),
        (post(None, raw="[1]"), 400, "invalid_body"),
        (post(None, raw='{"agentId": "chat-bot", "threadId": "a\\u0000"}'), 400, "invalid_text"),
        (post({"agentId": "nobody", "threadId": "t"}), 404, "agent_not_found"),
        (post({"agentId": "no-memory", "threadId": "t"}), 400, "agent_without_memory"),
    ]
    for response, status, code in cases:
        body = response.json()
        assert (response.status_code, body["code"], set(body)) == (status, code, {"error", "code", "message"})
    assert NotificationRecord.objects.count() == 0
    assert client.get("/chat/api/notifications/test").status_code == 405


# -- the demo site ---------------------------------------------------------------------------------
def test_the_demo_site_lists_every_agent_with_its_examples(client, alice, settings):
    from agents.registry import get_mastra

    settings.MASTRA = "mastra_site.mastra:mastra"
    get_mastra.cache_clear()
    try:
        client.force_login(alice)
        agents = client.get("/chat/api/agents").json()["agents"]
    finally:
        get_mastra.cache_clear()
    assert [(a["id"], a["available"], a["reason"]) for a in agents] == [
        ("ops-assistant", True, ""), ("policy-bot", True, ""), ("support-writer", True, ""),
        ("triage-notes", True, "")]
    ops = agents[0]
    assert ops["description"] == "Answers operators' questions, does arithmetic and tells the time."
    assert ops["examples"] == ['/tool calculate {"expression": "2*(3+4)"}', "/tool current-time",
                               '/tool restart-service {"service": "billing-api"}',
                               "What should I check first when the API returns 502s?"]
    assert all(a["examples"] for a in agents)
