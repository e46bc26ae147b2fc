"""Migration ``0009_messages_mastra_format`` on real rows, both ways, with Django's migration
executor: old rows (signals as the XML the model saw, tool results in ``tool`` rows) become
Mastra's stored format, and back."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from agents.runtime.stored_messages import to_model_messages

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("agents", "0008_thread_saved")]
AFTER = [("agents", "0009_messages_mastra_format")]
KEY = "alice\x1ft1"
AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
SIGNAL = {"id": "sig-1", "type": "user", "tagName": "user", "contents": "with <attrs>",
          "createdAt": "2026-01-02T03:04:06+00:00", "acceptedAt": "2026-01-02T03:04:06+00:00",
          "attributes": {"n": 3, "name": "Jane"}}  # PostgreSQL's jsonb order, not the XML's
XML = '<user name="Jane" n="3">with &lt;attrs&gt;</user>'
CALL = {"type": "tool-call", "toolCallId": "c1", "toolName": "add", "args": {"a": 2, "b": 3}}
RESULT = {"type": "tool-result", "toolCallId": "c1", "toolName": "add", "result": {"sum": 5}}


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def rows(apps):
    Message = apps.get_model("agents", "Message")
    return [(m.message_id, m.role, m.type, m.content, m.metadata)
            for m in Message.objects.filter(thread_id=KEY).order_by("id")]


@pytest.fixture
def old_rows():
    apps = migrate(BEFORE)
    Thread, Message = apps.get_model("agents", "Thread"), apps.get_model("agents", "Message")
    Thread.objects.create(key=KEY, resource_id="alice", thread_id="t1")
    for n, (message_id, role, type_, content, metadata) in enumerate([
            ("u1", "user", "", "2+3?", {}),
            ("a1", "assistant", "", [CALL], {}),
            ("r1", "tool", "", [RESULT], {}),
            ("a2", "assistant", "", [{"type": "text", "text": "It is 5."}], {}),
            ("sig-1", "user", "signal", XML, {"signal": SIGNAL})]):
        Message.objects.create(message_id=message_id, thread_id=KEY, resource_id="alice", role=role, type=type_,
                               content=content, metadata=metadata, created_at=AT.replace(second=n))
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # the schema the other tests expect


def test_forward_stores_mastras_format_and_the_model_sees_the_same(old_rows):
    from agents.models import Message

    migrate(AFTER)
    assert [(i, role, type_) for i, role, type_, _, _ in rows(migrate(AFTER))] == [
        ("u1", "user", ""), ("a1", "assistant", ""), ("a2", "assistant", ""), ("sig-1", "signal", "user")]
    stored = [m.to_dict() for m in Message.objects.filter(thread_id=KEY).order_by("id")]
    assert stored[0]["content"] == {"format": 2, "parts": [{"type": "text", "text": "2+3?"}], "content": "2+3?"}
    assert stored[1]["content"] == {"format": 2, "parts": [{"type": "tool-invocation", "toolInvocation": {
        "state": "result", "toolCallId": "c1", "toolName": "add", "args": {"a": 2, "b": 3}, "result": {"sum": 5}}}]}
    assert stored[3] == {
        "id": "sig-1", "role": "signal", "type": "user", "createdAt": "2026-01-02T03:04:04+00:00",
        "threadId": "t1", "resourceId": "alice",
        "content": {"format": 2, "parts": [{"type": "text", "text": "with <attrs>"}], "metadata": {"signal": {
            "id": "sig-1", "type": "user", "tagName": "user", "createdAt": "2026-01-02T03:04:06+00:00",
            "acceptedAt": "2026-01-02T03:04:06+00:00", "attributes": {"name": "Jane", "n": 3}}}}}
    assert list(stored[3]["content"]["metadata"]["signal"]["attributes"]) == ["name", "n"]  # the XML's order
    model = to_model_messages(stored)
    assert [(m["role"], m["content"]) for m in model] == [
        ("user", "2+3?"), ("assistant", [CALL]), ("tool", [RESULT]),
        ("assistant", [{"type": "text", "text": "It is 5."}]), ("user", XML)]


def test_backward_restores_the_old_shape(old_rows):
    migrate(AFTER)
    apps = migrate(BEFORE)
    back = rows(apps)
    assert [(i, role, type_, content) for i, role, type_, content, _ in back] == [
        ("u1", "user", "", "2+3?"), ("a1", "assistant", "", [CALL]), ("a1-results", "tool", "", [RESULT]),
        ("a2", "assistant", "", [{"type": "text", "text": "It is 5."}]), ("sig-1", "user", "signal", XML)]
    signal = back[4][4]["signal"]
    assert (signal["id"], signal["contents"], signal["attributes"]) == ("sig-1", "with <attrs>", {"name": "Jane", "n": 3})
