"""Erasure (``mastra_site.resource_erasure``): after ``resource_erase``, no row of any model holds or
points at the resource, another resource's rows are untouched, and the erasure record holds the
resource id only as a salted hash."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.core.serializers.json import DjangoJSONEncoder
from rest_framework.authtoken.models import Token

from agents.editor.models import AgentVersion
from agents.models import ThreadLease, ToolApproval
from mastra_site.exceptions import ErasureRefused
from mastra_site.models import ErasureRecord
from mastra_site.resource_erasure import erasure_records_for, resource_erase, resource_hash
from mastra_site.resource_export import resource_export
from mastra_site.resource_rows import resource_rows_find
from tests.mastra_site.planted import RESOURCE_TABLES, plant
from tests.mastra_site.rows import NOW

pytestmark = pytest.mark.django_db

ALICE, BOB = "alice.w", "bob.w"


@pytest.fixture
def operator():
    return User.objects.create_user(username="operator", is_staff=True)


@pytest.fixture
def alice(operator):
    return plant(ALICE, "a", operator)


@pytest.fixture
def bob(operator):
    return plant(BOB, "b", operator)


def every_row():
    """``(label, row dict as JSON text)`` of every row of every table."""
    for model in apps.get_models():
        if model._meta.proxy:
            continue
        for row in model._default_manager.all():
            values = {f.attname: f.value_from_object(row) for f in model._meta.concrete_fields}
            yield model._meta.label, json.dumps(values, cls=DjangoJSONEncoder, sort_keys=True)


def rows_holding(text: str) -> list[tuple[str, str]]:
    return sorted(found for found in every_row() if text in found[1])


def export_rows(resource_id: str) -> dict:
    document = resource_export(resource_id=resource_id)
    return {"account": document["account"], "tables": document["tables"], "counts": document["counts"]}


def test_the_plant_has_rows_of_the_resource_in_every_table_that_can_hold_them(alice):
    found = resource_rows_find(resource_id=ALICE)
    assert {entry.label for entry in found.linked} == RESOURCE_TABLES
    assert [entry.label for entry in found.linked if not entry.rows().exists()] == []
    assert found.account == alice.user


def test_after_erasure_no_row_anywhere_holds_or_points_at_the_resource(alice, bob):
    bob_before = export_rows(BOB)
    bob_rows_before = rows_holding(BOB)
    assert rows_holding(ALICE)  # planted everywhere (the keys of alice's threads hold her id)

    record = resource_erase(resource_id=ALICE, erased_by=alice.operator, via=ErasureRecord.Via.ADMIN, now=NOW)

    assert rows_holding(ALICE) == []
    assert [entry.label for entry in resource_rows_find(resource_id=ALICE).linked if entry.rows().exists()] == []
    # another resource's rows, with the same thread ids, are untouched
    assert export_rows(BOB) == bob_before
    assert rows_holding(BOB) == bob_rows_before
    assert record.rows == {
        "admin.LogEntry": {"deleted": 1}, "agents.Message": {"deleted": 3}, "agents.Run": {"deleted": 3},
        "agents.Score": {"deleted": 2}, "agents.Thread": {"deleted": 2}, "agents.ThreadEvent": {"deleted": 4},
        "agents.ThreadInput": {"deleted": 1}, "agents.ThreadLease": {"deleted": 2},
        "agents.ToolApproval": {"deleted": 1, "anonymised": 1}, "agents.TraceSpan": {"deleted": 3},
        "inbox.NotificationRecord": {"deleted": 2}, "inbox.WebhookDelivery": {"deleted": 1},
        "inbox.WebhookEndpoint": {"deleted": 1}, "inbox.WebhookRefusal": {"deleted": 1},
        "authtoken.Token": {"deleted": 1},
        "schedules.Schedule": {"deleted": 1}, "schedules.ScheduleTrigger": {"deleted": 1},
        "agent_channels.ChannelThread": {"deleted": 1}, "agent_channels.ChannelEvent": {"deleted": 1},
        "agent_channels.ChannelRun": {"deleted": 1}, "agent_channels.OutboxMessage": {"deleted": 1},
        "agent_channels.ChannelApproval": {"deleted": 1}, "agent_channels.ChannelDecision": {"deleted": 1},
        "budgets.BudgetCounter": {"deleted": 2}, "budgets.ActiveRunSlot": {"deleted": 1},
        "sessions.Session": {"deleted": 1}, "auth.User": {"anonymised": 1},
        "ledger.LedgerEntry": {"anonymised": 3}, "ledger.LedgerResourceDaily": {"anonymised": 1}}


def test_the_erasure_record_says_who_and_when_and_holds_only_a_salted_hash(alice, settings):
    settings.MASTRA_ERASURE_SALT = "pepper"
    record = resource_erase(resource_id=ALICE, erased_by=alice.operator, via=ErasureRecord.Via.ADMIN, now=NOW)
    expected = hmac.new(b"pepper", ALICE.encode(), hashlib.sha256).hexdigest()
    assert (record.resource_hash, record.erased_at, record.erased_by, record.erased_by_name, record.via,
            record.account) == (expected, NOW, alice.operator, "operator", "admin", "anonymised")
    assert expected != hashlib.sha256(ALICE.encode()).hexdigest()  # salted: not the plain digest
    assert list(erasure_records_for(resource_id=ALICE)) == [record]
    assert list(erasure_records_for(resource_id=BOB)) == []
    assert resource_hash(ALICE) == expected


def test_the_account_is_anonymised_and_its_token_and_sessions_go(alice):
    resource_erase(resource_id=ALICE, now=NOW)
    user = User.objects.get(pk=alice.user.pk)
    assert user.username == f"erased-{resource_hash(ALICE)[:16]}"
    assert (user.email, user.first_name, user.is_active, user.is_staff, user.has_usable_password()) == (
        "", "", False, False, False)
    assert not Token.objects.filter(user=user).exists()
    # the version it authored stays, with the new name
    assert list(AgentVersion.objects.filter(author=user).values_list("author_name", "note")) == [
        (user.username, "tone")]


def test_approval_decisions_stay_without_their_arguments(alice):
    resource_erase(resource_id=ALICE, now=NOW)
    assert list(ToolApproval.objects.filter(run_id="run-a1").values("tool_name", "status", "args", "state",
                                                                    "args_hash", "decided_at")) == [
        {"tool_name": "refund", "status": "approved", "args": {}, "state": {}, "args_hash": "", "decided_at": NOW}]
    assert not ToolApproval.objects.filter(run_id="run-a2").exists()  # pending: its run is gone


def test_keep_account_leaves_the_user_as_is(alice):
    record = resource_erase(resource_id=ALICE, keep_account=True, now=NOW)
    assert record.account == "kept"
    assert User.objects.get(pk=alice.user.pk).username == ALICE
    assert Token.objects.filter(user=alice.user).exists()
    assert "auth.User" not in record.rows


def test_a_resource_with_no_account_is_erased_and_says_so():
    from tests.mastra_site import rows

    rows.thread("api-caller-7", "t1")
    record = resource_erase(resource_id="api-caller-7", now=NOW)
    assert (record.account, record.rows) == ("none", {"agents.Thread": {"deleted": 1},
                                                      "agents.ThreadLease": {"deleted": 1}})


def test_a_resource_whose_run_is_going_on_is_refused(alice):
    ThreadLease.objects.filter(thread=alice.threads[0]).update(
        owner_run_id="run-a9", status=ThreadLease.Status.RUNNING, expires_at=NOW + timedelta(seconds=10))
    with pytest.raises(ErasureRefused) as refused:
        resource_erase(resource_id=ALICE, now=NOW)
    assert (refused.value.code, refused.value.message) == (
        "resource_busy", "a run of this resource is going on: abort it, then erase")
    assert rows_holding(ALICE) and not ErasureRecord.objects.exclude(resource_hash="0" * 64).exists()
    # once its lease expired (its process died), it can be erased
    resource_erase(resource_id=ALICE, now=NOW + timedelta(seconds=11))
    assert rows_holding(ALICE) == []


def test_an_empty_resource_id_is_refused():
    with pytest.raises(ErasureRefused) as refused:
        resource_erase(resource_id="")
    assert refused.value.code == "invalid_resource"


# -- manage.py erase_resource ---------------------------------------------------------------------
def test_the_command_erases_and_prints_each_table(alice):
    out = io.StringIO()
    call_command("erase_resource", ALICE, "--yes", stdout=out)
    record = ErasureRecord.objects.get(resource_hash=resource_hash(ALICE))
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["admin.LogEntry: deleted 1", "agent_channels.ChannelApproval: deleted 1",
                         "agent_channels.ChannelDecision: deleted 1"]
    assert "agents.ToolApproval: anonymised 1, deleted 1" in lines
    assert lines[-2:] == ["account: anonymised", f"erasure record {record.pk} ({record.resource_hash[:16]}…)"]
    assert (record.via, record.erased_by, record.erased_by_name) == ("command", None, "")
    assert rows_holding(ALICE) == []


def test_the_command_asks_first_and_stops_on_no(alice, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(CommandError, match="^not erased$"):
        call_command("erase_resource", ALICE, stdout=io.StringIO())
    assert rows_holding(ALICE)


def test_the_command_reports_a_refusal_by_code(alice):
    ThreadLease.objects.filter(thread=alice.threads[0]).update(
        owner_run_id="run-a9", status=ThreadLease.Status.RUNNING, expires_at=NOW + timedelta(days=3650))
    with pytest.raises(CommandError, match="^resource_busy: a run of this resource is going on"):
        call_command("erase_resource", ALICE, "--yes", stdout=io.StringIO())


# -- rows a real conversation writes ----------------------------------------------------------------
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_real_conversation_leaves_nothing_after_erasure():
    from tests.agents.thread_harness import bounded, db, make_agent, settle, wait_idle

    agent = make_agent()
    for resource_id in (ALICE, BOB):
        for text in ("hello", "and again"):
            r = await agent.send_message(f"{text} from {resource_id}", resource_id=resource_id, thread_id="t1")
            await bounded(r.output.get_full_output())
            await wait_idle(resource_id, "t1")
    await settle()
    bob_before = await db(lambda: export_rows(BOB))
    assert await db(lambda: rows_holding(ALICE))
    record = await db(lambda: resource_erase(resource_id=ALICE))
    assert await db(lambda: rows_holding(ALICE)) == []
    assert await db(lambda: export_rows(BOB)) == bob_before
    # two turns: two runs with their trace spans, four messages, the inputs, the event log
    assert set(record.rows) == {"agents.Thread", "agents.ThreadLease", "agents.Message", "agents.Run",
                                "agents.ThreadInput", "agents.ThreadEvent", "agents.TraceSpan"}
    assert [record.rows[label]["deleted"] for label in ("agents.Thread", "agents.Message", "agents.Run")] == [1, 4, 2]
