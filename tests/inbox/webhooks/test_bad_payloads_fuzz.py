"""Fuzz the webhooks with signed deliveries: the fixtures with fields replaced by values of the
shapes of ``tests.bad_input`` (wrong types, deep nesting, lone surrogates, NUL, huge numbers), and
bodies that are no object at all: never a 5xx, always a JSON error with a stable code."""

import json
import time

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.bad_input import SHAPES, check_error_body, encode, field_values, json_bodies
from tests.inbox.webhooks.conftest import fixture_bytes, github_signature, post, slack_signature

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

GITHUB = {"issue_comment": "issue_comment_created", "pull_request_review": "pull_request_review_submitted",
          "pull_request_review_comment": "pull_request_review_comment_created",
          "workflow_run": "workflow_run_failure", "check_run": "check_run_failure",
          "check_suite": "check_suite_failure", "ping": "ping"}
SLACK = ["app_mention", "message_im", "url_verification", "reaction_added"]


def paths(value, prefix=()) -> list[tuple]:
    """Every key path of a JSON object (``("issue", "number")``...)."""
    found = []
    if isinstance(value, dict):
        for key, child in value.items():
            found.append((*prefix, key))
            found.extend(paths(child, (*prefix, key)))
    return found


def replaced(payload: dict, changes: dict) -> dict:
    """A copy of ``payload`` with the value at each path of ``changes`` replaced."""
    payload = json.loads(json.dumps(payload))
    for path, value in changes.items():
        node = payload
        for name in path[:-1]:
            if not isinstance(node.get(name), dict):
                break
            node = node[name]
        else:
            node[path[-1]] = value
    return payload


def deliveries(payload: dict) -> st.SearchStrategy[bytes]:
    """The payload with up to three fields of odd values, or a body of its own (not an object,
    nested too deep...)."""
    changes = st.dictionaries(st.sampled_from(paths(payload)), field_values(), min_size=1, max_size=3)
    mutated = changes.map(lambda c: encode(replaced(payload, c)).encode("utf-8", "surrogatepass"))
    return st.one_of(mutated, mutated, mutated, json_bodies({}))


def fixture(source: str, name: str) -> dict:
    return json.loads(fixture_bytes(source, name))


github_bodies = st.fixed_dictionaries({event: deliveries(fixture("github", name)) for event, name in GITHUB.items()})
slack_bodies = st.fixed_dictionaries({name: deliveries(fixture("slack", name)) for name in SLACK})


def leaf(payload: dict, path: tuple) -> bool:
    for name in path:
        payload = payload[name]
    return not isinstance(payload, dict)


def every_field(source: str, name: str, shape: str) -> bytes:
    """The fixture with every field that is not an object, at every depth, set to the value of
    ``shape`` (the objects keep their keys, so every reader of a field meets the shape)."""
    payload = fixture(source, name)
    value = SHAPES[shape]
    changed = replaced(payload, {path: value for path in paths(payload) if leaf(payload, path)})
    return encode(changed).encode("utf-8", "surrogatepass")


def shaped(shape: str) -> dict:
    return {"github": {event: every_field("github", name, shape) for event, name in GITHUB.items()},
            "slack": {name: every_field("slack", name, shape) for name in SLACK}}


@settings(max_examples=10, deadline=None, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(github=github_bodies, slack=slack_bodies)
@example(**shaped("object"))
@example(**shaped("nul"))
@example(**shaped("surrogate"))
@example(**shaped("long"))
@example(**shaped("huge"))
@example(**shaped("deep"))
async def test_no_signed_delivery_is_a_server_error(github_endpoint, slack_endpoint, github, slack):
    for n, (event, body) in enumerate(github.items()):
        response = await post("/api/webhooks/github/ops", body, {
            "X-GitHub-Event": event, "X-GitHub-Delivery": f"d{time.monotonic_ns()}-{n}",
            "X-Hub-Signature-256": github_signature(body)})
        check_error_body(response.status_code, response.content, (event, body[:300]))
    for name, body in slack.items():
        now = int(time.time())
        response = await post("/api/webhooks/slack/team", body, {
            "X-Slack-Request-Timestamp": str(now), "X-Slack-Signature": slack_signature(body, now)})
        check_error_body(response.status_code, response.content, (name, body[:300]))
