"""The editor page's "Try it" stream (answer text, tool calls and results, usage, errors, as JSON
lines) and when "Roll back to the code's definition" is offered."""

import json

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from agents.editor.models import AgentDefinition, AgentVersion
from agents.editor.services import version_publish, version_rollback, version_save
from agents.editor.trying import chunk_frame

pytestmark = pytest.mark.django_db


async def collect(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


def page_url(agent_id):
    return reverse("admin:agents_agentdefinition_change", args=[AgentDefinition.objects.get(agent_id=agent_id).pk])


def try_frames(client, agent_id, prompt, version=""):
    url = reverse("admin:agents_agentdefinition_try", args=[AgentDefinition.objects.get(agent_id=agent_id).pk])
    response = client.post(url, {"prompt": prompt, "version": version})
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    frames = [json.loads(line) for line in async_to_sync(collect)(response).decode().splitlines()]
    assert frames[-1]["type"] == "finish" and isinstance(frames[-1].pop("durationMs"), int)
    return frames


@pytest.mark.django_db(transaction=True)  # the streamed run reads the database from another thread
def test_a_try_streams_the_answer_and_its_usage(editor_admin_site, admin_client):
    assert try_frames(admin_client, "free", "hello") == [
        {"type": "text", "text": "system: Code free. | tools: alpha=The alpha tool., beta=The beta tool."},
        {"type": "finish", "finishReason": "stop", "models": ["test/config-echo"],
         "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8}}]


@pytest.mark.django_db(transaction=True)
def test_a_try_shows_the_tool_calls_and_their_results(editor_admin_site, admin_client):
    assert try_frames(admin_client, "free", "/call alpha") == [
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "alpha", "args": {"prompt": "hi"}},
        {"type": "tool-result", "toolCallId": "call-1", "toolName": "alpha", "result": {"tool": "alpha"},
         "isError": False},
        {"type": "text", "text": "alpha said: None"},
        {"type": "finish", "finishReason": "stop", "models": ["test/config-echo", "test/config-echo"],
         # the test model reports no total for these steps: the sum is what the provider said
         "usage": {"inputTokens": 2, "outputTokens": 2, "totalTokens": 0}}]


@pytest.mark.django_db(transaction=True)
def test_a_tool_that_needs_an_approval_is_shown_waiting(editor_admin_site, admin_client):
    frames = try_frames(admin_client, "careful", "/call wipe")
    assert frames[0] == {"type": "tool-call", "toolCallId": "call-1", "toolName": "wipe", "args": {"prompt": "hi"}}
    assert frames[1] == {"type": "approval", "toolCallId": "call-1", "toolName": "wipe", "args": {"prompt": "hi"}}
    assert frames[-1]["finishReason"] == "suspended"


@pytest.mark.django_db(transaction=True)
def test_a_bad_version_is_an_error_frame(editor_admin_site, admin_client):
    url = reverse("admin:agents_agentdefinition_try", args=[AgentDefinition.objects.get(agent_id="free").pk])
    body = async_to_sync(collect)(admin_client.post(url, {"prompt": "hi", "version": "999"})).decode()
    assert [json.loads(line) for line in body.splitlines()] == [
        {"type": "error", "message": "options.versions.agents.free.version_id: no version 999 of agent 'free'"}]


def test_chunks_the_panel_does_not_show_are_dropped():
    assert chunk_frame({"type": "step-finish", "payload": {}}) is None
    assert chunk_frame({"type": "text-delta", "payload": {"id": "t", "text": "**hi**"}}) == {"type": "text",
                                                                                             "text": "**hi**"}


ROLL_BACK = "Roll back to the code's definition"


def test_roll_back_to_code_is_offered_only_while_something_else_is_published(editor_admin_site, admin_client):
    assert ROLL_BACK not in admin_client.get(page_url("free")).content.decode()  # no versions
    v1 = version_save(agent_id="free", changes={"instructions": "One."}, based_on_id=None)
    assert ROLL_BACK not in admin_client.get(page_url("free")).content.decode()  # a draft: the code runs
    version_publish(version_id=v1.pk)
    page = admin_client.get(page_url("free")).content.decode()
    assert page.count(ROLL_BACK) == 1 and 'id="rollback-code"' in page
    version_rollback(agent_id="free", to_version_id=None)
    assert AgentVersion.objects.get(status="published").overrides == {}
    assert ROLL_BACK not in admin_client.get(page_url("free")).content.decode()  # the code runs again


def test_a_published_version_the_code_now_locks_entirely_is_the_code(editor_admin_site, admin_client):
    definition = AgentDefinition.objects.get(agent_id="instr")  # only its instructions are editable
    version = AgentVersion.objects.create(agent=definition, number=1, overrides={"tools": ["gamma"]})
    version_publish(version_id=version.pk)
    assert ROLL_BACK not in admin_client.get(page_url("instr")).content.decode()
