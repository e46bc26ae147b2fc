"""The pure policy logic of ``agents.runtime.notifications``: decisions, precedence, fallbacks,
validation and the XML the model sees. No database."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest

from agents.runtime.errors import NotificationError
from agents.runtime.notifications import (NotificationDecision, default_decision, normalize_decision,
                                          notification_xml, plan_thread_dispatch, resolve_decision, summary_xml,
                                          validate_notification, validate_policy)

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def record(**overrides) -> dict:
    base = {"id": "ntf_1", "source": "github", "kind": "ci-status", "priority": "medium", "summary": "CI failed",
            "attributes": {}, "coalesced_count": 1}
    return {**base, **overrides}


# -- the built-in table: Mastra's defaultNotificationDeliveryDecision, reason codes and timing ---------
@pytest.mark.parametrize("priority, active, expected", [
    ("urgent", False, {"action": "deliver", "reason": "urgent"}),
    ("urgent", True, {"action": "deliver", "reason": "urgent"}),
    ("high", False, {"action": "deliver", "reason": "idle-high"}),
    ("high", True, {"action": "summarize", "summaryAt": "2026-01-05T09:00:00.000Z",
                    "deliverAt": "2026-01-05T09:00:00.000Z", "reason": "active-high-summary-then-full"}),
    ("medium", False, {"action": "deliver", "reason": "idle-medium"}),
    ("medium", True, {"action": "summarize", "summaryAt": "2026-01-05T09:00:00.000Z",
                      "reason": "active-batch-summary"}),
    ("low", False, {"action": "summarize", "summaryAt": "2026-01-05T09:00:00.000Z", "reason": "idle-low-summary"}),
    ("low", True, {"action": "summarize", "summaryAt": "2026-01-05T09:00:00.000Z",
                   "reason": "active-batch-summary"}),
])
def test_the_default_table_decides_by_priority_and_thread_state_as_mastra(priority, active, expected):
    decision = default_decision(priority, active, NOW)
    assert decision.to_dict() == expected
    assert list(decision.to_dict()) == list(expected)  # Mastra's key order


def test_decision_times_are_written_as_javascript_writes_them():
    decision = NotificationDecision("summarize", summary_at=datetime(2026, 11, 29, 17, 40, 48, 363999,
                                                                     tzinfo=timezone.utc), reason="idle-low-summary")
    assert decision.to_dict() == {"action": "summarize", "summaryAt": "2026-11-29T17:40:48.363Z",
                                  "reason": "idle-low-summary"}


# -- precedence: decide() → sources → priorities → default → built-in ----------------------------
POLICY = {
    "decide": lambda ctx: "discard" if ctx["record"]["kind"] == "spam" else None,
    "sources": {"slack": "persist"},
    "priorities": {"low": {"action": "defer", "deliverAt": "2026-01-05T17:00:00Z"}},
    "default": {"action": "summarize", "summary_at": timedelta(minutes=30), "reason": "digest"},
}


@pytest.mark.asyncio
@pytest.mark.parametrize("rec, action, level", [
    (record(kind="spam", source="slack", priority="low"), "discard", "decide"),
    (record(source="slack", priority="low"), "persist", "source"),
    (record(priority="low"), "defer", "priority"),
    (record(priority="urgent"), "summarize", "default"),
])
async def test_each_level_of_the_policy_wins_over_the_next(rec, action, level):
    decision = await resolve_decision(validate_policy(POLICY), rec, False, NOW)
    assert (decision.action, decision.level) == (action, level)


@pytest.mark.asyncio
async def test_relative_and_iso_times_resolve_against_now():
    policy = validate_policy(POLICY)
    digest = await resolve_decision(policy, record(priority="high"), True, NOW)
    assert digest == NotificationDecision("summarize", reason="digest", summary_at=NOW + timedelta(minutes=30),
                                          level="default")
    later = await resolve_decision(policy, record(priority="low"), True, NOW)
    assert later.deliver_at == datetime(2026, 1, 5, 17, 0, tzinfo=timezone.utc)
    assert later.reason is None  # a rule without a reason gives none, as in Mastra
    assert later.to_dict() == {"action": "defer", "deliverAt": "2026-01-05T17:00:00.000Z"}


@pytest.mark.asyncio
async def test_without_a_policy_the_built_in_table_decides():
    decision = await resolve_decision(None, record(priority="high"), True, NOW)
    assert decision.level == "builtin"
    assert decision == NotificationDecision("summarize", summary_at=NOW, deliver_at=NOW,
                                            reason="active-high-summary-then-full")


@pytest.mark.asyncio
async def test_decide_gets_the_record_the_thread_state_and_the_clock():
    seen = {}

    async def decide(ctx):
        seen.update(ctx)
        return {"action": "deliver", "streamOptions": {"max_steps": 2}, "reason": "async decide"}

    decision = await resolve_decision(validate_policy({"decide": decide}), record(), True, NOW,
                                      thread={"active": True, "run_id": "run-1"})
    assert decision == NotificationDecision("deliver", reason="async decide", stream_options={"max_steps": 2},
                                            level="decide")
    assert seen["record"]["id"] == "ntf_1" and seen["thread_active"] is True and seen["now"] == NOW
    assert seen["thread"] == {"active": True, "run_id": "run-1"}


@pytest.mark.asyncio
@pytest.mark.parametrize("decide", [
    lambda ctx: 1 / 0,
    lambda ctx: "explode",
    lambda ctx: {"action": "deliver", "when": "later"},
    lambda ctx: 42,
])
async def test_a_decide_that_fails_falls_back_to_the_default_decision_and_logs(decide, caplog):
    policy = validate_policy({"decide": decide, "sources": {"github": "discard"}})
    with caplog.at_level(logging.WARNING, logger="agents.runtime.notifications"):
        decision = await resolve_decision(policy, record(priority="medium"), True, NOW)
    assert decision.action == "summarize" and decision.level == "fallback"
    assert decision.to_dict() == {"action": "summarize", "summaryAt": "2026-01-05T09:00:00.000Z",
                                  "reason": "active-batch-summary"}
    assert "decide() failed for notification ntf_1" in caplog.text


# -- validation --------------------------------------------------------------------------------
@pytest.mark.parametrize("policy, message", [
    ("deliver", "must be a dict"),
    ({"prioritys": {}}, "unknown key 'prioritys'"),
    ({"priorities": {"critical": "deliver"}}, "unknown priority 'critical'"),
    ({"sources": {"github": "shout"}}, "unknown action 'shout'"),
    ({"default": {"action": "deliver", "deliver_at": 12}}, "deliver_at must be a datetime"),
    ({"decide": "not callable"}, "decide must be callable"),
])
def test_a_bad_policy_is_refused_with_a_code(policy, message):
    with pytest.raises(NotificationError) as exc:
        validate_policy(policy)
    assert exc.value.code == "invalid_policy" and message in exc.value.message


@pytest.mark.parametrize("value", ["shout", {"reason": "no action"}, {"action": "deliver", "summary_at": "soon"},
                                   {"action": "deliver", "deliver_when_idle": "yes"}, ["deliver"]])
def test_a_bad_decision_is_refused(value):
    with pytest.raises(NotificationError) as exc:
        normalize_decision(value, now=NOW, level="decide")
    assert exc.value.code == "invalid_decision"


@pytest.mark.parametrize("notification, code", [
    ("CI failed", "invalid_notification"),
    ({"source": "github", "kind": "ci", "summary": "x", "priority": "critical"}, "invalid_priority"),
    ({"source": "", "kind": "ci", "summary": "x"}, "missing_source"),
    ({"source": "github", "kind": "  ", "summary": "x"}, "missing_kind"),
    ({"source": "github", "kind": "ci", "summary": ""}, "missing_summary"),
    ({"source": "github", "kind": "ci"}, "missing_summary"),
    ({"source": "github", "kind": "ci", "summary": "x", "payload": {"at": object()}}, "invalid_payload"),
    ({"source": "github", "kind": "ci", "summary": "x", "payload": float("nan")}, "invalid_payload"),
    ({"source": "github", "kind": "ci", "summary": "x", "metadata": ["a"]}, "invalid_metadata"),
    ({"source": "github", "kind": "ci", "summary": "x", "attributes": {"bad name": 1}}, "invalid_attributes"),
    ({"source": "github", "kind": "ci", "summary": "x", "attributes": {"repo": {"a": 1}}}, "invalid_attributes"),
    ({"source": "github", "kind": "ci", "summary": "x", "dedupe_key": ""}, "invalid_notification"),
    ({"source": "github", "kind": "ci", "summary": "x", "colour": "red"}, "invalid_notification"),
    ({"source": "g" * 101, "kind": "ci", "summary": "x"}, "invalid_notification"),
])
def test_bad_notifications_are_refused_with_a_stable_code(notification, code):
    with pytest.raises(NotificationError) as exc:
        validate_notification(notification)
    assert exc.value.code == code
    assert exc.value.to_dict()["code"] == code


def test_a_notification_is_normalised_with_camel_case_keys_and_a_default_priority():
    assert validate_notification({"source": "github", "kind": "ci-status", "summary": "CI failed",
                                  "dedupeKey": "k", "coalesceKey": "c", "sourceId": "evt-1"}) == {
        "source": "github", "kind": "ci-status", "priority": "medium", "summary": "CI failed", "payload": None,
        "dedupe_key": "k", "coalesce_key": "c", "source_id": "evt-1", "attributes": {}, "metadata": {}}


# -- XML ---------------------------------------------------------------------------------------
def test_a_full_notification_renders_custom_attributes_first_then_the_standard_ones():
    # as a JavaScript spread: a custom key that collides keeps its first position, with the core value
    rec = record(attributes={"repo": "acme/app", "id": "ignored", "draft": False}, coalesced_count=3,
                 summary='Build <main> & "tests" failed')
    assert notification_xml(rec) == (
        '<notification repo="acme/app" id="ntf_1" draft="false" source="github" type="ci-status" '
        'kind="ci-status" priority="medium" status="delivered" coalescedCount="3">'
        'Build &lt;main&gt; &amp; "tests" failed</notification>')


def test_coalesced_count_appears_only_above_one():
    assert notification_xml(record(), status="seen") == (
        '<notification id="ntf_1" source="github" type="ci-status" kind="ci-status" priority="medium" '
        'status="seen">CI failed</notification>')


def test_a_summary_counts_pending_records_by_sorted_source_with_the_highest_priority():
    records = [record(id="1", source="slack", priority="low"), record(id="2", source="github", priority="high"),
               record(id="3", source="github", priority="medium"), record(id="4", source="email", priority="low"),
               record(id="5", source="zulip", priority="urgent", status="delivered")]  # not pending: not counted
    assert summary_xml(records) == ('<notification-summary pending="4" priority="high">'
                                    'email: 1, github: 2, slack: 1</notification-summary>')


def test_a_summary_over_no_pending_record_says_so():
    assert summary_xml([]) == '<notification-summary pending="0">No pending notifications</notification-summary>'
    assert summary_xml([record(status="seen")]) == (
        '<notification-summary pending="0">No pending notifications</notification-summary>')


# -- dispatcher planning -----------------------------------------------------------------------
def test_planning_puts_full_deliveries_first_by_priority_and_waits_for_idle_only_when_asked():
    due = NOW - timedelta(seconds=1)
    records = [
        record(id="low-digest", priority="low", summary_at=due),
        record(id="medium-full", priority="medium", deliver_at=due),
        record(id="urgent-full", priority="urgent", deliver_at=due),
        record(id="high-waits", priority="high", deliver_at=due, deliver_when_idle=True, summary_signal_id="s1"),
        record(id="high-waits-new", priority="high", deliver_at=due, deliver_when_idle=True),
        record(id="later", priority="high", deliver_at=NOW + timedelta(hours=1)),
    ]
    busy = plan_thread_dispatch(records, thread_active=True, now=NOW)
    assert [r["id"] for r in busy.deliver] == ["urgent-full", "medium-full"]
    assert [r["id"] for r in busy.wait] == ["high-waits", "high-waits-new"]
    assert [r["id"] for r in busy.summarise] == ["high-waits-new", "low-digest"]
    idle = plan_thread_dispatch(records, thread_active=False, now=NOW)
    assert [r["id"] for r in idle.deliver] == ["urgent-full", "high-waits", "high-waits-new", "medium-full"]
    assert [r["id"] for r in idle.summarise] == ["low-digest"] and idle.wait == []


def test_a_result_is_written_with_mastras_keys():
    from agents.runtime.notifications import NotificationResult

    decision = default_decision("low", False, NOW)
    result = NotificationResult(record=record(summary_at=NOW, priority="low"), decision=decision)
    assert result.to_dict() == {
        "record": {**record(priority="low"), "summary_at": "2026-01-05T09:00:00.000Z"},
        "decision": {"action": "summarize", "summaryAt": "2026-01-05T09:00:00.000Z", "reason": "idle-low-summary"}}
    woke = NotificationResult(record=record(), decision=default_decision("medium", False, NOW),
                              signal={"id": "sig-1"}, run_id="run-1", action="wake")
    assert woke.to_dict() == {"record": record(), "decision": {"action": "deliver", "reason": "idle-medium"},
                              "runId": "run-1", "signal": {"id": "sig-1"}, "action": "wake"}
