"""The front door: the chat page at /, login, logout, the first operator account, and the JSON the
page reads (agents, threads, notifications panel)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.models import Thread
from agents.runtime import CompositeVoice, LocalVoice
from inbox.models import NotificationRecord

pytestmark = pytest.mark.django_db

User = get_user_model()
LOCAL = {"REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "localhost:8000"}
SETUP = {"username": "root", "password1": "a-long-secret-9", "password2": "a-long-secret-9"}


@pytest.fixture
def alice():
    return User.objects.create_user("alice", password="alice-secret-1")


@pytest.fixture
def bob():
    return User.objects.create_user("bob", password="bob-secret-1")


def test_an_anonymous_visitor_goes_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_a_signed_in_user_gets_the_chat_page(client, alice):
    client.force_login(alice)
    response = client.get("/")
    assert response.status_code == 200
    assert b'id="composer"' in response.content
    assert b"chat/chat.js" in response.content


def test_login_and_logout(client, alice):
    page = client.get("/login/")
    assert page.status_code == 200 and b'id="login-form"' in page.content
    response = client.post("/login/", {"username": "alice", "password": "alice-secret-1"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.get("/logout/").status_code == 405  # a link cannot log anyone out
    response = client.post("/logout/")
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.get("/").status_code == 302


def test_a_wrong_password_shows_an_error(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_the_login_page_offers_the_first_operator_account_on_a_fresh_install_from_this_machine(client):
    page = client.get("/login/", **LOCAL)
    assert b'id="setup-link"' in page.content


def test_the_offer_is_gone_once_a_user_exists_or_from_elsewhere(client, alice):
    assert b'id="setup-link"' not in client.get("/login/", **LOCAL).content
    User.objects.all().delete()
    assert b'id="setup-link"' not in client.get("/login/", REMOTE_ADDR="192.168.1.20", HTTP_HOST="localhost").content
    assert b'id="setup-link"' not in client.get("/login/", HTTP_X_FORWARDED_FOR="203.0.113.9", **LOCAL).content


def test_the_first_operator_account_is_created_and_signed_in(client):
    assert client.get("/setup/", **LOCAL).status_code == 200
    response = client.post("/setup/", SETUP, **LOCAL)
    assert response.status_code == 302 and response["Location"] == "/"
    root = User.objects.get()
    assert (root.username, root.is_staff, root.is_superuser) == ("root", True, True)
    assert root.check_password("a-long-secret-9")
    assert client.get("/", **LOCAL).status_code == 200


def test_the_first_operator_account_only_while_no_user_exists(client, alice):
    assert client.get("/setup/", **LOCAL).status_code == 403
    response = client.post("/setup/", SETUP, **LOCAL)
    assert response.status_code == 403
    assert list(User.objects.values_list("username", flat=True)) == ["alice"]


@pytest.mark.parametrize("meta", [{"REMOTE_ADDR": "10.0.0.5"}, {"REMOTE_ADDR": "::ffff:8.8.8.8"},
                                  {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9"},
                                  {"REMOTE_ADDR": "127.0.0.1", "HTTP_FORWARDED": "for=203.0.113.9"},
                                  {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_REAL_IP": "203.0.113.9"}])
def test_the_first_operator_account_only_from_this_machine(client, meta):
    meta = {"HTTP_HOST": "localhost", **meta}  # a loopback name: the peer or a forwarding header closes it
    assert client.get("/setup/", **meta).status_code == 403
    assert client.post("/setup/", SETUP, **meta).status_code == 403
    assert User.objects.count() == 0


def test_ipv6_loopback_may_create_the_first_operator(client):
    assert client.post("/setup/", SETUP, REMOTE_ADDR="::1", HTTP_HOST="[::1]:8000").status_code == 302
    assert User.objects.count() == 1


def test_a_weak_or_mismatched_password_is_refused(client):
    response = client.post("/setup/", {**SETUP, "password2": "different-9999"}, **LOCAL)
    assert response.status_code == 200 and b"password fields didn" in response.content
    response = client.post("/setup/", {**SETUP, "password1": "123", "password2": "123"}, **LOCAL)
    assert response.status_code == 200 and b"too short" in response.content
    assert User.objects.count() == 0


# -- the page's JSON ----------------------------------------------------------------------------
def test_the_json_views_answer_401_when_not_signed_in(client):
    for url in ("/chat/api/agents", "/chat/api/threads", "/chat/api/notifications"):
        response = client.get(url)
        assert response.status_code == 401
        assert response.json() == {"error": "sign in first", "code": "not_authenticated", "message": "sign in first"}


def test_every_agent_is_listed_by_name_and_one_without_memory_says_why(client, alice, chat_site):
    client.force_login(alice)
    assert client.get("/chat/api/agents").json() == {"agents": [
        {"id": "helper", "name": "Another Helper", "description": "", "examples": [], "available": True,
         "reason": "", "voice": {"speak": False, "listen": False}},
        {"id": "broken", "name": "Broken", "description": "", "examples": [], "available": True, "reason": "",
         "voice": {"speak": False, "listen": False}},
        {"id": "chat-bot", "name": "Chat Bot", "description": "Echoes what it is told.",
         "examples": ['/tool delete-file {"path": "/tmp/x"}', "Hello there"], "available": True, "reason": "",
         "voice": {"speak": False, "listen": False}},
        {"id": "forgetful", "name": "Forgetful", "description": "", "examples": [], "available": True,
         "reason": "", "voice": {"speak": False, "listen": False}},
        {"id": "writer", "name": "Markdown Writer", "description": "Answers with a table and some code.",
         "examples": [], "available": True, "reason": "", "voice": {"speak": False, "listen": False}},
        {"id": "no-memory", "name": "No Memory", "description": "", "examples": [], "available": False,
         "reason": "no memory: use the API",
         "voice": {"speak": False, "listen": False}}],
        "voiceLimits": {"maxAudioBytes": 10 * 1024 * 1024, "maxAudioSeconds": 300}}


def test_the_agents_list_says_what_each_voice_can_do(client, alice, chat_site, settings):
    settings.MASTRA_VOICE_MAX_AUDIO_BYTES, settings.MASTRA_VOICE_MAX_AUDIO_SECONDS = 2048, 30
    chat_site(voice=CompositeVoice(input=LocalVoice()))  # the chat bot listens, and does not speak
    client.force_login(alice)
    data = client.get("/chat/api/agents").json()
    voices = {a["id"]: a["voice"] for a in data["agents"]}
    assert voices["helper"] == {"speak": False, "listen": False}
    assert voices["chat-bot"] == {"speak": False, "listen": True}
    assert data["voiceLimits"] == {"maxAudioBytes": 2048, "maxAudioSeconds": 30}
    chat_site(voice=CompositeVoice(input=LocalVoice(), output=LocalVoice()))
    voices = {a["id"]: a["voice"] for a in client.get("/chat/api/agents").json()["agents"]}
    assert voices["chat-bot"] == {"speak": True, "listen": True}


def test_threads_are_the_callers_own_newest_first_and_searchable(client, alice, bob):
    Thread.objects.create(thread_id="t-old", resource_id="alice", title="Deploy notes")
    Thread.objects.create(thread_id="t-new", resource_id="alice", title="Budget")
    Thread.objects.create(thread_id="t-bob", resource_id="bob", title="Deploy secrets")
    client.force_login(alice)
    listed = client.get("/chat/api/threads").json()["threads"]
    assert [t["id"] for t in listed] == ["t-new", "t-old"]
    assert [t["title"] for t in listed] == ["Budget", "Deploy notes"]
    assert [t["id"] for t in client.get("/chat/api/threads?q=deploy").json()["threads"]] == ["t-old"]
    assert client.get("/chat/api/threads?q=" + "x" * 201).status_code == 400


def test_a_thread_without_a_title_shows_its_first_input_and_is_found_by_what_was_said(client, alice):
    from agents.store import messages_save
    from agents.runtime.signal import create_signal, render_signal

    Thread.objects.create(thread_id="t1", resource_id="alice")
    first = render_signal(create_signal({"type": "user", "contents": "Where is   the\nrunbook?", "attributes": {"via": "web"}}))
    reply = {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "In the wiki."}],
             "createdAt": first["createdAt"]}
    messages_save(resource_id="alice", thread_id="t1", messages=[first, reply])
    client.force_login(alice)
    listed = client.get("/chat/api/threads").json()["threads"]
    assert [(t["id"], t["title"], t["preview"]) for t in listed] == [("t1", "", "Where is the runbook?")]
    assert [t["id"] for t in client.get("/chat/api/threads?q=WIKI").json()["threads"]] == ["t1"]
    assert client.get("/chat/api/threads?q=nowhere").json()["threads"] == []


def found(client, query: str) -> list[str]:
    """The ids of the signed-in user's threads that ``query`` finds (sorted)."""
    return sorted(t["id"] for t in client.get("/chat/api/threads", {"q": query}).json()["threads"])


def test_the_search_folds_case_in_every_alphabet(client, alice):
    """SQLite keeps JSON's non-ASCII characters as escapes and folds only ASCII letters: the
    search decodes and folds both sides there (agents.text_search)."""
    from agents.models import ThreadInput
    from agents.runtime.signal import create_signal, render_signal
    from agents.store import messages_save

    Thread.objects.create(thread_id="t-title", resource_id="alice", title="Déploiement de lundi")
    Thread.objects.create(thread_id="t-said", resource_id="alice")
    said = render_signal(create_signal({"type": "user", "contents": "Où est le café ? 🚀"}))
    messages_save(resource_id="alice", thread_id="t-said", messages=[said])
    asked = Thread.objects.create(thread_id="t-asked", resource_id="alice")
    signal = create_signal({"type": "user", "contents": "Почему сборка упала?"})
    ThreadInput.objects.create(thread=asked, input_id=signal["id"], agent_id="chat-bot", kind="deliver", signal=signal)
    typed = render_signal(create_signal({"type": "user", "contents": "the text \\u00e9, typed"}))
    Thread.objects.create(thread_id="t-typed", resource_id="alice")
    messages_save(resource_id="alice", thread_id="t-typed", messages=[typed])
    client.force_login(alice)
    assert found(client, "DÉPLOIEMENT") == found(client, "déploiement") == ["t-title"]
    assert found(client, "CAFÉ") == found(client, "où est") == ["t-said"]
    assert found(client, "🚀") == ["t-said"]
    assert found(client, "СБОРКА") == ["t-asked"]
    assert found(client, "é, typed") == []  # a backslash and "u00e9" were typed, not "é"
    assert found(client, "ü") == []


def test_the_search_matches_the_words_said_not_how_they_are_stored(client, alice):
    """A stored message and an accepted input are JSON: their keys, part types, tool calls, the
    signal's id, tag, attributes and times are not what was said. The search reads the text parts,
    as the preview does, and takes ``%`` and ``_`` as the characters they are."""
    from agents.models import ThreadInput
    from agents.runtime.signal import create_signal, render_signal
    from agents.store import messages_save

    Thread.objects.create(thread_id="t-said", resource_id="alice")
    first = render_signal(create_signal({"type": "user", "contents": "Roll back the canary",
                                         "attributes": {"via": "slack"}}))
    reply = {"id": "m-reply", "role": "assistant", "createdAt": first["createdAt"], "content": [
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "kubectl", "args": {"cmd": "rollout undo"}},
        {"type": "text", "text": "Done: 3 pods restarted."}]}
    messages_save(resource_id="alice", thread_id="t-said", messages=[first, reply])
    asked = Thread.objects.create(thread_id="t-asked", resource_id="alice")
    signal = create_signal({"type": "user", "contents": [{"type": "text", "text": "Ping the on-call"}],
                            "attributes": {"priority": "high"}})
    ThreadInput.objects.create(thread=asked, input_id=signal["id"], agent_id="chat-bot", kind="deliver", signal=signal)
    disk = Thread.objects.create(thread_id="t-disk", resource_id="alice")
    signal = create_signal({"type": "user", "contents": "Disk at 90% on db_1"})
    ThreadInput.objects.create(thread=disk, input_id=signal["id"], agent_id="chat-bot", kind="deliver", signal=signal)
    client.force_login(alice)
    assert found(client, "canary") == found(client, "PODS RESTARTED") == ["t-said"]
    assert found(client, "on-call") == ["t-asked"]
    for stored_only in ("format", "parts", "text", "user", "assistant", "tool", "kubectl", "rollout", "call-1",
                        "slack", "priority", "high", "signal", first["id"], str(timezone.now().year)):
        assert found(client, stored_only) == [], stored_only
    assert found(client, "90%") == found(client, "%") == found(client, "db_1") == ["t-disk"]
    assert found(client, "at_90") == found(client, "9%o") == []


def test_a_thread_whose_first_run_goes_on_shows_and_is_found_by_its_accepted_input(client, alice):
    """The first message is stored when the first run ends; until then the list shows the input, and
    the search finds the thread by what was accepted (not by what was cancelled)."""
    from agents.models import ThreadInput
    from agents.store import messages_save
    from agents.runtime.signal import create_signal, render_signal

    def accept(thread: Thread, contents, **fields) -> dict:
        signal = create_signal({"type": "user", "contents": contents})
        ThreadInput.objects.create(thread=thread, input_id=signal["id"], agent_id="chat-bot", kind="deliver",
                                   signal=signal, **fields)
        return signal

    running = Thread.objects.create(thread_id="t-running", resource_id="alice")
    accept(running, "Never mind", status="cancelled")
    accept(running, "Why did   the\ndeploy fail?", status="consumed", run_id="r1")
    accept(running, "And the one before?")
    parts = Thread.objects.create(thread_id="t-parts", resource_id="alice")
    accept(parts, [{"type": "image", "image": "https://example.com/a.png"}, {"type": "text", "text": "What is this?"}])
    done = Thread.objects.create(thread_id="t-done", resource_id="alice")
    first = accept(done, "Where is the runbook?", status="consumed", run_id="r2")
    messages_save(resource_id="alice", thread_id="t-done", messages=[render_signal(first)])
    empty = Thread.objects.create(thread_id="t-empty", resource_id="alice")
    for thread, at in ((running, 3), (parts, 2), (done, 1), (empty, 0)):
        Thread.objects.filter(pk=thread.pk).update(updated_at=timezone.now() - timedelta(minutes=at))
    client.force_login(alice)
    listed = client.get("/chat/api/threads").json()["threads"]
    assert [(t["id"], t["preview"]) for t in listed] == [
        ("t-empty", ""), ("t-done", "Where is the runbook?"), ("t-parts", "What is this?"),
        ("t-running", "Why did the deploy fail?")]
    assert found(client, "DEPLOY") == ["t-running"]  # consumed by the run that goes on
    assert found(client, "the one before") == ["t-running"]  # waiting for it
    assert found(client, "what is this") == ["t-parts"]
    assert found(client, "runbook") == ["t-done"]  # stored, and accepted: listed once
    assert found(client, "never mind") == []  # cancelled


def test_a_new_thread_is_a_fresh_id_and_writes_nothing(client, alice):
    client.force_login(alice)
    first = client.post("/chat/api/threads")
    second = client.post("/chat/api/threads")
    assert first.status_code == 201 and first.json()["id"].startswith("thread_")
    assert first.json()["id"] != second.json()["id"]
    assert Thread.objects.count() == 0


def make_record(thread_id: str, resource_id: str, **fields) -> NotificationRecord:
    thread, _ = Thread.objects.get_or_create(thread_id=thread_id, resource_id=resource_id)
    return NotificationRecord.objects.create(agent_id="chat-bot", resource_id=resource_id, thread_id=thread.key,
                                             source="github", kind="ci-status",
                                             **{"summary": "CI failed", "created_at": timezone.now(),
                                                "updated_at": timezone.now(), **fields})


def test_the_notifications_panel_counts_and_lists_the_callers_records(client, alice):
    pending = make_record("t1", "alice")
    delivered = make_record("t1", "alice", status="delivered", summary="deploy done")
    make_record("t1", "alice", status="dismissed")
    make_record("t-bob", "bob")
    client.force_login(alice)
    panel = client.get("/chat/api/notifications").json()
    assert (panel["pending"], panel["unread"]) == (1, 2)
    assert sorted(r["id"] for r in panel["records"]) == sorted([pending.id, delivered.id])
    assert client.get("/chat/api/notifications?threadId=other").json()["records"] == []


def test_mark_read_and_dismiss_change_only_the_callers_records(client, alice):
    mine = make_record("t1", "alice")
    theirs = make_record("t-bob", "bob")
    client.force_login(alice)
    response = client.post(f"/chat/api/notifications/{mine.id}/read")
    assert response.json() == {"id": mine.id, "changed": 1}
    mine.refresh_from_db()
    assert mine.status == "seen"
    assert client.post(f"/chat/api/notifications/{mine.id}/dismiss").json()["changed"] == 1
    mine.refresh_from_db()
    assert mine.status == "dismissed"
    response = client.post(f"/chat/api/notifications/{theirs.id}/dismiss")
    assert response.status_code == 404 and response.json()["code"] == "notification_not_found"
    theirs.refresh_from_db()
    assert theirs.status == "pending"
    assert client.post(f"/chat/api/notifications/{mine.id}/explode").status_code == 404


def test_a_nul_character_in_the_query_or_the_url_is_invalid_text(client, alice):
    """PostgreSQL cannot compare text with a NUL: refused before any query (docs/security.md)."""
    client.force_login(alice)
    for response in (client.get("/chat/api/threads?q=a%00b"), client.get("/chat/api/notifications?threadId=t%00"),
                     client.post("/chat/api/notifications/n%00/read")):
        assert response.status_code == 400, response.content
        assert response.json()["code"] == "invalid_text"
