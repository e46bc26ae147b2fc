"""GitHub deliveries: signature, ping, failed CI runs (high, one pending record per repository and
branch), review comments and mentions (medium), redeliveries stored once, other events ignored."""

import json

import pytest

from inbox.models import NotificationRecord, WebhookDelivery
from tests.inbox.webhooks.conftest import SECRET, fixture_bytes, github_signature, post, reply

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

URL = "/api/webhooks/github/ops"


async def deliver(event: str, body: bytes, delivery: str, *, signature: str | None = None):
    return await post(URL, body, {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
                                  "X-Hub-Signature-256": signature or github_signature(body)})


async def records() -> list[NotificationRecord]:
    return [r async for r in NotificationRecord.objects.order_by("created_at", "id")]


async def test_ping_is_acknowledged_and_stores_nothing(github_endpoint):
    response = await deliver("ping", fixture_bytes("github", "ping"), "d-ping")
    assert response.status_code == 200
    assert reply(response) == {"ok": True, "zen": "Design for failure."}
    assert await records() == [] and await WebhookDelivery.objects.acount() == 0


@pytest.mark.parametrize("signature", ["sha256=" + "0" * 64, "sha1=abc", "", None])
async def test_a_bad_signature_is_401_and_stores_nothing(github_endpoint, signature):
    body = fixture_bytes("github", "workflow_run_failure")
    headers = {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": "d1"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    response = await post(URL, body, headers)
    assert response.status_code == 401
    assert reply(response)["code"] == "invalid_signature"
    assert await records() == [] and await WebhookDelivery.objects.acount() == 0


async def test_a_body_signed_with_another_secret_is_refused(github_endpoint):
    body = fixture_bytes("github", "workflow_run_failure")
    response = await deliver("workflow_run", body, "d1", signature=github_signature(body, "other"))
    assert response.status_code == 401


async def test_an_unknown_or_disabled_endpoint_is_404(github_endpoint):
    body = fixture_bytes("github", "ping")
    response = await post("/api/webhooks/github/nope", body, {"X-GitHub-Event": "ping",
                                                              "X-Hub-Signature-256": github_signature(body)})
    assert response.status_code == 404 and reply(response)["code"] == "endpoint_not_found"
    github_endpoint.enabled = False
    await github_endpoint.asave()
    assert (await deliver("ping", body, "d")).status_code == 404
    slack = await post("/api/webhooks/slack/ops", body, {})
    assert slack.status_code == 404


async def test_a_failed_workflow_run_is_a_high_ci_status_notification(github_endpoint):
    response = await deliver("workflow_run", fixture_bytes("github", "workflow_run_failure"), "d1")
    assert response.status_code == 200
    answer = reply(response)
    assert answer["status"] == "stored" and answer["threadId"] == "github:acme/service"
    [record] = await records()
    assert (record.source, record.kind, record.priority, record.resource_id, record.thread_id) == (
        "github", "ci-status", "high", "alice", "alice\x1fgithub:acme/service")  # the thread's key
    assert record.summary == "Build failure on acme/service@main"
    assert record.dedupe_key == "acme/service@main" and record.id == answer["recordId"]
    assert record.payload["url"] == "https://github.com/acme/service/actions/runs/30433642"
    delivery = await WebhookDelivery.objects.aget()
    assert (delivery.delivery_id, delivery.event, delivery.outcome, delivery.record_ids) == (
        "d1", "workflow_run", "stored", [record.id])


FORM = "application/x-www-form-urlencoded"


async def test_githubs_default_form_encoded_delivery_is_read_from_its_payload_field(github_endpoint):
    """GitHub's default content type posts ``payload=<the JSON, url-encoded>``; the signature covers
    the raw form body."""
    from urllib.parse import urlencode

    form = urlencode({"payload": fixture_bytes("github", "workflow_run_failure").decode()}).encode()
    headers = {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": "f1"}
    forged = await post(URL, form, {**headers, "X-Hub-Signature-256": github_signature(b"something else")},
                        content_type=FORM)
    assert (forged.status_code, reply(forged)["code"]) == (401, "invalid_signature")
    response = await post(URL, form, {**headers, "X-Hub-Signature-256": github_signature(form)}, content_type=FORM)
    assert response.status_code == 200, response.content
    assert reply(response)["status"] == "stored" and reply(response)["threadId"] == "github:acme/service"
    [record] = await records()
    assert (record.kind, record.summary) == ("ci-status", "Build failure on acme/service@main")
    # a form body without its payload field is bad input, not a 500
    empty = urlencode({"other": "x"}).encode()
    missing = await post(URL, empty, {"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": "f2",
                                      "X-Hub-Signature-256": github_signature(empty)}, content_type=FORM)
    assert (missing.status_code, reply(missing)["code"]) == (400, "invalid_payload")


async def test_another_user_cannot_squat_the_endpoints_thread_id(github_endpoint):
    from agents.models import Thread

    # mallory creates the predictable thread id first: it is mallory's own thread
    await Thread.objects.acreate(thread_id="github:acme/service", resource_id="mallory", title="squatted")
    response = await deliver("workflow_run", fixture_bytes("github", "workflow_run_failure"), "d1")
    assert response.status_code == 200 and reply(response)["status"] == "stored"
    [record] = await records()
    assert (record.resource_id, record.thread_id) == ("alice", "alice\x1fgithub:acme/service")
    assert sorted([(t.resource_id, t.title) async for t in Thread.objects.filter(thread_id="github:acme/service")]) == [
        ("alice", ""), ("mallory", "squatted")]


async def test_a_redelivery_is_200_and_stores_nothing_more(github_endpoint):
    body = fixture_bytes("github", "workflow_run_failure")
    await deliver("workflow_run", body, "d1")
    again = await deliver("workflow_run", body, "d1")
    assert again.status_code == 200 and reply(again) == {"ok": True, "status": "duplicate", "deliveryId": "d1"}
    [record] = await records()
    assert record.coalesced_count == 1


async def test_ci_failures_are_deduplicated_per_repository_and_branch(github_endpoint):
    # low priority keeps the records pending (summarised, never woken), so a second failure of the
    # same branch coalesces into the pending record
    github_endpoint.priority_rules = {"ci-status": "low"}
    await github_endpoint.asave()
    await deliver("workflow_run", fixture_bytes("github", "workflow_run_failure"), "d1")
    await deliver("check_suite", fixture_bytes("github", "check_suite_failure"), "d2")
    await deliver("check_run", fixture_bytes("github", "check_run_failure"), "d3")
    main, feature = await records()
    assert (main.dedupe_key, main.coalesced_count) == ("acme/service@main", 1)
    assert (feature.dedupe_key, feature.coalesced_count, feature.status) == ("acme/service@feature/login", 2, "pending")
    assert feature.summary == "Octocoders-linter timed out on acme/service@feature/login"
    assert await WebhookDelivery.objects.filter(outcome="stored").acount() == 3


async def test_a_high_ci_failure_is_delivered_at_once_to_an_idle_thread(github_endpoint):
    await deliver("workflow_run", fixture_bytes("github", "workflow_run_failure"), "d1")
    [record] = await records()
    assert record.status == "delivered" and record.delivered_signal_id


async def test_a_successful_run_is_ignored_with_202(github_endpoint):
    response = await deliver("workflow_run", fixture_bytes("github", "workflow_run_success"), "d1")
    assert response.status_code == 202
    assert reply(response) == {"ok": True, "status": "ignored",
                               "reason": "workflow_run completed (success) is not a failure"}
    assert await records() == []
    assert (await WebhookDelivery.objects.aget()).outcome == "ignored"


async def test_an_unknown_event_is_ignored_and_logged(github_endpoint, caplog):
    body = json.dumps({"action": "opened", "repository": {"full_name": "acme/service"}}).encode()
    response = await deliver("deployment_status", body, "d1")
    assert response.status_code == 202 and reply(response)["reason"] == "event 'deployment_status' is not handled"
    assert "ignored deployment_status" in caplog.text
    assert await records() == []


async def test_reviews_and_comments_are_medium_review_comments_or_mentions(github_endpoint):
    await deliver("pull_request_review", fixture_bytes("github", "pull_request_review_submitted"), "d1")
    await deliver("pull_request_review_comment", fixture_bytes("github", "pull_request_review_comment_created"), "d2")
    await deliver("issue_comment", fixture_bytes("github", "issue_comment_created"), "d3")
    review, mention, comment = await records()
    assert (review.kind, review.priority) == ("review-comment", "medium")
    assert review.summary == ("hubot on acme/service#2 (changes_requested): Please rename the helper before "
                              "merging.")
    assert (mention.kind, mention.priority) == ("mention", "medium")
    assert mention.payload["body"] == "@ops-bot can you double-check this line?"
    assert (comment.kind, comment.summary) == (
        "review-comment", "octocat on acme/service#1: You are totally right! I'll get this fixed right away.")
    assert {r.thread_id for r in (review, mention, comment)} == {"alice\x1fgithub:acme/service"}


async def test_priority_rules_of_the_endpoint_apply(github_endpoint):
    github_endpoint.priority_rules = {"ci-status": "urgent"}
    await github_endpoint.asave()
    await deliver("workflow_run", fixture_bytes("github", "workflow_run_failure"), "d1")
    [record] = await records()
    assert record.priority == "urgent"


async def test_a_body_that_is_not_json_is_400_after_the_signature(github_endpoint):
    response = await deliver("workflow_run", b"{nope", "d1")
    assert response.status_code == 400 and reply(response)["code"] == "invalid_json"


async def test_a_missing_agent_releases_the_delivery_for_a_retry(github_endpoint):
    github_endpoint.agent_id = "gone"
    await github_endpoint.asave()
    body = fixture_bytes("github", "workflow_run_failure")
    response = await deliver("workflow_run", body, "d1")
    assert response.status_code == 404 and reply(response)["code"] == "agent_not_found"
    assert await WebhookDelivery.objects.acount() == 0
    github_endpoint.agent_id = "echo"
    await github_endpoint.asave()
    assert (await deliver("workflow_run", body, "d1")).status_code == 200
    assert len(await records()) == 1


async def test_the_signature_check_needs_a_secret():
    from inbox.webhooks import github

    body = b"{}"
    assert github.signature_valid(SECRET, body, github_signature(body))
    assert not github.signature_valid("", body, github_signature(body, ""))


# Replays. Only the body is signed: X-GitHub-Delivery and X-GitHub-Event can be changed by whoever
# captured a delivery, so an event is stored once per its own identity in the body.

def edited(name: str, **changes) -> bytes:
    """A fixture body with ``changes`` made to its main object (a genuinely different event)."""
    payload = json.loads(fixture_bytes("github", name))
    main = next(key for key in ("workflow_run", "comment") if key in payload)
    payload[main].update(changes)
    return json.dumps(payload).encode()


async def test_a_delivery_without_a_delivery_id_is_400_and_stores_nothing(github_endpoint):
    body = fixture_bytes("github", "workflow_run_failure")
    response = await post(URL, body, {"X-GitHub-Event": "workflow_run", "X-Hub-Signature-256": github_signature(body)})
    assert response.status_code == 400
    assert reply(response)["code"] == "missing_delivery_id"
    assert await records() == [] and await WebhookDelivery.objects.acount() == 0


async def test_a_replay_under_a_new_delivery_id_is_a_duplicate(github_endpoint):
    body = fixture_bytes("github", "workflow_run_failure")
    assert reply(await deliver("workflow_run", body, "d1"))["status"] == "stored"
    for delivery in ("d2", "d3", "d4"):
        again = await deliver("workflow_run", body, delivery)
        assert again.status_code == 200
        assert reply(again) == {"ok": True, "status": "duplicate", "deliveryId": delivery}
    assert len(await records()) == 1
    assert [d.delivery_id async for d in WebhookDelivery.objects.all()] == ["d1"]


async def test_a_replay_without_a_delivery_id_stores_nothing(github_endpoint):
    body = fixture_bytes("github", "issue_comment_created")
    assert reply(await deliver("issue_comment", body, "d1"))["status"] == "stored"
    for _ in range(3):
        again = await post(URL, body, {"X-GitHub-Event": "issue_comment", "X-Hub-Signature-256": github_signature(body)})
        assert again.status_code == 400 and reply(again)["code"] == "missing_delivery_id"
    assert len(await records()) == 1 and await WebhookDelivery.objects.acount() == 1


@pytest.mark.parametrize(("fixture", "event", "other_events"), [
    ("issue_comment_created", "issue_comment", ["pull_request_review_comment", "pull_request_review", "check_run"]),
    ("workflow_run_failure", "workflow_run", ["check_suite", "check_run", "issue_comment"]),
])
async def test_a_replay_under_another_event_header_is_a_duplicate(github_endpoint, fixture, event, other_events):
    body = fixture_bytes("github", fixture)
    assert reply(await deliver(event, body, "d1"))["status"] == "stored"
    for number, other in enumerate(other_events, start=2):
        again = await deliver(other, body, f"d{number}")
        assert again.status_code == 200 and reply(again)["status"] == "duplicate"
    assert len(await records()) == 1
    assert [(d.delivery_id, d.event) async for d in WebhookDelivery.objects.all()] == [("d1", event)]


async def test_genuinely_different_events_are_stored_each(github_endpoint):
    # another comment; and a re-run of the same workflow run (GitHub keeps the run's id, bumps
    # run_attempt and updated_at)
    await deliver("issue_comment", fixture_bytes("github", "issue_comment_created"), "d1")
    await deliver("issue_comment", edited("issue_comment_created", id=492700401), "d2")
    await deliver("workflow_run", fixture_bytes("github", "workflow_run_failure"), "d3")
    rerun = edited("workflow_run_failure", run_attempt=2, updated_at="2026-11-30T21:02:10Z")
    assert reply(await deliver("workflow_run", rerun, "d4"))["status"] == "stored"
    assert await WebhookDelivery.objects.filter(outcome="stored").acount() == 4
    assert [r.kind for r in await records()] == ["review-comment", "review-comment", "ci-status", "ci-status"]


async def test_an_ignored_event_is_recorded_once_too(github_endpoint):
    body = json.dumps({"ref": "refs/heads/main", "after": "acb5820"}).encode()
    assert (await deliver("push", body, "d1")).status_code == 202
    again = await deliver("push", body, "d2")
    assert again.status_code == 200 and reply(again)["status"] == "duplicate"
    assert await WebhookDelivery.objects.acount() == 1


async def test_the_event_key_is_the_identity_in_the_body():
    from inbox.webhooks.github import event_key

    run = json.loads(fixture_bytes("github", "workflow_run_failure"))
    assert event_key(run) == "workflow_run:30433642:completed:2026-11-30T20:43:21Z:1"
    rerun = {**run, "workflow_run": {**run["workflow_run"], "run_attempt": 2}}
    assert event_key(rerun) != event_key(run)
    assert event_key({**run, "action": "in_progress"}) != event_key(run)
    issue_comment = json.loads(fixture_bytes("github", "issue_comment_created"))
    review_comment = json.loads(fixture_bytes("github", "pull_request_review_comment_created"))
    assert event_key(issue_comment) == "comment@issue:492700400:created::"
    assert event_key(review_comment) == "comment@pull_request:284312630:created::"
    review = json.loads(fixture_bytes("github", "pull_request_review_submitted"))
    assert event_key(review) == "review:237895671:submitted:2026-11-30T18:30:32Z:"
    # no object with an id: the body itself (the same bytes parse to the same key)
    push = {"ref": "refs/heads/main", "after": "acb5820"}
    assert event_key(push).startswith("sha256:") and event_key(push) == event_key(dict(reversed(push.items())))
    assert event_key({**push, "after": "ffff"}) != event_key(push)


async def test_the_claim_is_decided_by_the_database(github_endpoint):
    from asgiref.sync import sync_to_async

    from inbox.webhooks.services import webhook_delivery_claim

    claim = sync_to_async(webhook_delivery_claim)
    assert await claim(endpoint=github_endpoint, delivery_id="d1", event_key="comment@issue:1:created::", event="x")
    # another delivery id, the same event; the same delivery id, another event
    assert not await claim(endpoint=github_endpoint, delivery_id="d2", event_key="comment@issue:1:created::", event="x")
    assert not await claim(endpoint=github_endpoint, delivery_id="d1", event_key="comment@issue:2:created::", event="x")
    assert await claim(endpoint=github_endpoint, delivery_id="d2", event_key="comment@issue:2:created::", event="x")
    assert await WebhookDelivery.objects.acount() == 2
