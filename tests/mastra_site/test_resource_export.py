"""Export (``mastra_site.resource_export``): one JSON document with every row of a resource, secrets
withheld, nothing of another resource; ``manage.py export_resource``."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from tests.mastra_site.planted import RESOURCE_TABLES, plant

pytestmark = pytest.mark.django_db

ALICE, BOB = "alice.w", "bob.w"
EXPECTED_COUNTS = {
    "admin.LogEntry": 1, "agents.Message": 3, "agents.Run": 3, "agents.Score": 2, "agents.Thread": 2,
    "agents.ThreadEvent": 4, "agents.ThreadInput": 1, "agents.ThreadLease": 2, "agents.ToolApproval": 2,
    "agents.TraceSpan": 3, "inbox.NotificationRecord": 2, "inbox.WebhookDelivery": 1, "inbox.WebhookEndpoint": 1,
    "inbox.WebhookRefusal": 1,
    "schedules.Schedule": 1, "schedules.ScheduleTrigger": 1, "agent_channels.ChannelThread": 1,
    "agent_channels.ChannelEvent": 1, "agent_channels.ChannelRun": 1, "agent_channels.OutboxMessage": 1,
    "agent_channels.ChannelApproval": 1, "agent_channels.ChannelDecision": 1, "budgets.BudgetCounter": 2,
    "budgets.ActiveRunSlot": 1, "ledger.LedgerEntry": 3, "ledger.LedgerResourceDaily": 1}


@pytest.fixture
def planted():
    operator = User.objects.create_user(username="operator", is_staff=True)
    return plant(ALICE, "a", operator), plant(BOB, "b", operator)


def export(*args) -> dict:
    out = io.StringIO()
    call_command("export_resource", *args, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_the_document_holds_every_row_of_the_resource_and_none_of_another(planted):
    document = export(ALICE)
    assert (document["format"], document["version"], document["resourceId"]) == ("mastra-resource-export", 1, ALICE)
    assert document["counts"] == EXPECTED_COUNTS and set(EXPECTED_COUNTS) == RESOURCE_TABLES
    assert {label: len(rows) for label, rows in document["tables"].items()} == EXPECTED_COUNTS
    assert BOB not in json.dumps(document)
    thread = document["tables"]["agents.Thread"][0]
    assert {k: v for k, v in thread.items() if not k.endswith("_at")} == {
        "key": f"{ALICE}\x1ft1", "resource_id": ALICE, "thread_id": "t1", "title": f"t1 of {ALICE}",
        "metadata": {}, "saved": True}
    assert [m["message_id"] for m in document["tables"]["agents.Message"]] == ["m1", "m2", "m1"]
    assert sorted(s["run_id"] for s in document["tables"]["agents.TraceSpan"]) == ["run-a1", "run-a3", "run-a4"]
    assert sorted(a["tool_call_id"] for a in document["tables"]["agents.ToolApproval"]) == ["call-1", "call-2"]


def test_secrets_are_withheld_and_the_account_is_there(planted):
    document = export(ALICE)
    [user] = document["account"]["auth.User"]
    assert (user["username"], user["email"], user["password"]) == (ALICE, f"{ALICE}@example.com", "(withheld)")
    [token] = document["account"]["authtoken.Token"]
    assert token["key"] == "(withheld)" and token["user_id"] == user["id"]
    assert set(document["account"]) == {"auth.User", "authtoken.Token"}
    assert document["tables"]["inbox.WebhookEndpoint"][0]["secret"] == "(withheld)"
    assert "pw-123456" not in json.dumps(document) and "s3cret" not in json.dumps(document)


def test_an_unknown_resource_exports_an_empty_document(planted):
    document = export("nobody")
    assert (document["account"], document["tables"]) == ({}, {})
    assert set(document["counts"].values()) == {0}


def test_output_writes_the_document_to_a_file(planted, tmp_path):
    target = tmp_path / "alice.json"
    err = io.StringIO()
    call_command("export_resource", ALICE, "--output", str(target), stdout=io.StringIO(), stderr=err)
    assert json.loads(target.read_text())["counts"] == EXPECTED_COUNTS
    assert err.getvalue().strip() == f"exported '{ALICE}' to {target}"
