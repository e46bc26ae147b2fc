"""Signed deliveries whose fields have the wrong type (a GitHub ``repository`` that is a string, an
``issue.number`` that is an object, a Slack ``event`` that is a list...) are 400 ``invalid_payload``;
bodies nested too deep or holding a lone surrogate or a NUL are 400 as on every JSON route. Nothing
is stored for any of them, and the delivery id stays free for a good redelivery."""

import json
import time

import pytest

from inbox.models import NotificationRecord, WebhookDelivery
from tests.inbox.webhooks.conftest import fixture_bytes, github_signature, post, reply, slack_signature

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def mutated(source: str, fixture: str, path: str, value) -> bytes:
    """The fixture with the field at ``path`` (dotted) set to ``value``."""
    payload = json.loads(fixture_bytes(source, fixture))
    *parents, last = path.split(".")
    node = payload
    for name in parents:
        node = node[name]
    node[last] = value
    return json.dumps(payload).encode()


async def github(event: str, body: bytes, delivery: str = "d1"):
    return await post("/api/webhooks/github/ops", body, {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
                                                         "X-Hub-Signature-256": github_signature(body)})


async def slack(body: bytes):
    now = int(time.time())
    return await post("/api/webhooks/slack/team", body, {"X-Slack-Request-Timestamp": str(now),
                                                         "X-Slack-Signature": slack_signature(body, now)})


async def nothing_stored() -> bool:
    return await NotificationRecord.objects.acount() == 0 and await WebhookDelivery.objects.acount() == 0


GITHUB_ODD = [
    ("issue_comment", "issue_comment_created", "repository", "acme/service"),
    ("issue_comment", "issue_comment_created", "repository", [1]),
    ("issue_comment", "issue_comment_created", "repository.full_name", {"a": 1}),
    ("issue_comment", "issue_comment_created", "issue", "1"),
    ("issue_comment", "issue_comment_created", "issue.number", {"n": 1}),
    ("issue_comment", "issue_comment_created", "issue.number", [1]),
    ("issue_comment", "issue_comment_created", "issue.number", True),
    ("issue_comment", "issue_comment_created", "issue.title", 7),
    ("issue_comment", "issue_comment_created", "comment", ["x"]),
    ("issue_comment", "issue_comment_created", "comment.body", 5),
    ("issue_comment", "issue_comment_created", "comment.id", {"id": 1}),
    ("issue_comment", "issue_comment_created", "comment.user", "octocat"),
    ("issue_comment", "issue_comment_created", "comment.user.login", ["octocat"]),
    ("issue_comment", "issue_comment_created", "action", ["created"]),
    ("pull_request_review", "pull_request_review_submitted", "review.state", 1),
    ("pull_request_review", "pull_request_review_submitted", "pull_request.head", "main"),
    ("pull_request_review", "pull_request_review_submitted", "pull_request.head.ref", 3),
    ("pull_request_review_comment", "pull_request_review_comment_created", "pull_request", 12),
    ("workflow_run", "workflow_run_failure", "workflow_run", ["failure"]),
    ("workflow_run", "workflow_run_failure", "workflow_run.conclusion", ["failure"]),
    ("workflow_run", "workflow_run_failure", "workflow_run.conclusion", {"x": 1}),
    ("workflow_run", "workflow_run_failure", "workflow_run.head_branch", {"b": 1}),
    ("workflow_run", "workflow_run_failure", "workflow_run.name", 1),
    ("workflow_run", "workflow_run_failure", "sender", "octocat"),
    ("workflow_run", "workflow_run_failure", "sender.login", 2),
    ("check_run", "check_run_failure", "check_run.check_suite", "x"),
    ("check_run", "check_run_failure", "check_run.check_suite.head_branch", 1),
    ("check_suite", "check_suite_failure", "check_suite.app", "x"),
]


async def test_github_fields_of_the_wrong_type_are_invalid_payload(github_endpoint):
    for n, (event, fixture, path, value) in enumerate(GITHUB_ODD):
        response = await github(event, mutated("github", fixture, path, value), f"d{n}")
        assert response.status_code == 400, (path, value, response.content)
        assert reply(response)["code"] == "invalid_payload", (path, value)
        assert path.split(".")[-1] in reply(response)["message"], (path, reply(response))
    assert await nothing_stored()


SLACK_ODD = [
    ("app_mention", "event", ["app_mention"]),
    ("app_mention", "event", "app_mention"),
    ("app_mention", "event", 5),
    ("app_mention", "event.text", 42),
    ("app_mention", "event.text", {"t": "x"}),
    ("app_mention", "event.user", ["U1"]),
    ("app_mention", "event.channel", {"c": 1}),
    ("app_mention", "event.type", ["app_mention"]),
    ("app_mention", "event_id", {"id": 1}),
    ("app_mention", "type", ["event_callback"]),
    ("message_im", "event.channel_type", ["im"]),
    ("url_verification", "challenge", {"c": 1}),
]


async def test_slack_fields_of_the_wrong_type_are_invalid_payload(slack_endpoint):
    for fixture, path, value in SLACK_ODD:
        response = await slack(mutated("slack", fixture, path, value))
        assert response.status_code == 400, (path, value, response.content)
        assert reply(response)["code"] == "invalid_payload", (path, value)
        assert path.split(".")[-1] in reply(response)["message"], (path, reply(response))
    assert await nothing_stored()


async def test_a_good_redelivery_after_a_bad_one_is_stored(github_endpoint):
    bad = await github("issue_comment", mutated("github", "issue_comment_created", "issue.number", {}), "d1")
    assert bad.status_code == 400
    good = await github("issue_comment", fixture_bytes("github", "issue_comment_created"), "d1")
    assert good.status_code == 200 and reply(good)["status"] == "stored"
    assert await NotificationRecord.objects.acount() == 1


@pytest.mark.parametrize("body,code", [
    (b"[" * 100_000, "invalid_json"),
    (b'{"action": "created", "comment": ' + b'{"a":' * 200 + b"1" + b"}" * 200 + b"}", "invalid_json"),
    (b'{"action": "created", "comment": {"body": "hi \\ud800"}}', "invalid_text"),
    (b'{"action": "created", "comment": {"body": "hi \\u0000"}}', "invalid_text"),
    (b'{"action": "created", "number": NaN}', "invalid_json"),
    (b'{"action": "created", "number": ' + b"1" * 5000 + b"}", "invalid_json"),
    (b'"created"', "invalid_body"),
])
async def test_bodies_no_json_route_accepts_are_refused_the_same_way(github_endpoint, slack_endpoint, body, code):
    for response in (await github("issue_comment", body), await slack(body)):
        assert response.status_code == 400, response.content
        assert reply(response)["code"] == code
    assert await nothing_stored()
