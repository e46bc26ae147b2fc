"""GitHub webhooks: the ``X-Hub-Signature-256`` check and the events that become notifications.

- ``ping`` → acknowledged, nothing stored;
- a failed ``workflow_run``, ``check_suite`` or ``check_run`` (completed with conclusion
  ``failure``, ``timed_out`` or ``startup_failure``) → kind ``ci-status``, priority ``high``,
  deduplicated per repository and branch (a pending one is coalesced);
- ``pull_request_review`` (submitted), ``pull_request_review_comment`` and ``issue_comment``
  (created) → ``review-comment``, or ``mention`` when the text names the endpoint's
  ``mention_name``; priority ``medium``;
- anything else → ignored.

Only the body is signed: ``X-GitHub-Delivery`` and ``X-GitHub-Event`` can be changed by anyone who
captured a delivery. :func:`event_key` names the event by what the body says (its main object,
that object's id, the action and the object's time and attempt), so that a replay of the same bytes
under another delivery id or event name is the same event.

Fields are read by type (``events.read_object`` and its siblings): one of the wrong type is
``invalid_payload`` (400), nothing stored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json

from ..endpoint_rules import DEFAULT_PRIORITIES
from .events import PayloadError, WebhookEvent, clip, read_id, read_object, read_text

FAILED = frozenset({"failure", "timed_out", "startup_failure"})
CI_EVENTS = {"workflow_run": "workflow_run", "check_suite": "check_suite", "check_run": "check_run"}


def signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is ``sha256=<hex HMAC-SHA256 of body under secret>`` (constant time)."""
    if not header or not header.startswith("sha256=") or not secret:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def ci_event(event: str, payload: dict, delivery_id: str) -> WebhookEvent:
    item = read_object(payload, event)
    repository = read_text(read_object(payload, "repository"), "full_name", "repository.")
    action, conclusion = read_text(payload, "action"), read_text(item, "conclusion", f"{event}.")
    if action != "completed" or conclusion not in FAILED:
        return WebhookEvent(event, delivery_id, ignored=f"{event} {action or None} "
                                                        f"({conclusion or 'no conclusion'}) is not a failure")
    if event == "check_run":
        branch = read_text(read_object(item, "check_suite", f"{event}."), "head_branch", f"{event}.check_suite.")
    else:
        branch = read_text(item, "head_branch", f"{event}.")
    name = (read_text(item, "name", f"{event}.") or read_text(read_object(item, "app", f"{event}."), "name",
                                                                 f"{event}.app.") or event.replace("_", " "))
    summary = f"{name} {conclusion.replace('_', ' ')} on {repository}@{branch}"
    item_id = read_id(item, "id", f"{event}.")
    notification = {
        "source": "github", "kind": "ci-status", "summary": clip(summary),
        "source_id": None if item_id in (None, "") else str(item_id),
        "dedupe_key": f"{repository}@{branch}",
        "payload": {"event": event, "repository": repository, "branch": branch, "conclusion": conclusion,
                    "sha": item.get("head_sha"), "url": item.get("html_url") or item.get("details_url")},
    }
    user = read_text(read_object(payload, "sender"), "login", "sender.")
    return WebhookEvent(event, delivery_id, notification, DEFAULT_PRIORITIES["github"]["ci-status"],
                        {"repository": repository, "branch": branch, "user": user})


COMMENT_ACTIONS = {"pull_request_review": "submitted", "pull_request_review_comment": "created",
                   "issue_comment": "created"}


def comment_event(event: str, payload: dict, delivery_id: str, mention_name: str) -> WebhookEvent:
    action = read_text(payload, "action")
    if action != COMMENT_ACTIONS[event]:
        return WebhookEvent(event, delivery_id, ignored=f"{event} {action or None} is not a new comment")
    repository = read_text(read_object(payload, "repository"), "full_name", "repository.")
    item_key = "review" if event == "pull_request_review" else "comment"
    target_key = "issue" if event == "issue_comment" else "pull_request"
    item, target = read_object(payload, item_key), read_object(payload, target_key)
    text = read_text(item, "body", f"{item_key}.")
    user = read_text(read_object(item, "user", f"{item_key}."), "login", f"{item_key}.user.")
    number = read_id(target, "number", f"{target_key}.")
    title = read_text(target, "title", f"{target_key}.") or None
    branch = read_text(read_object(target, "head", f"{target_key}."), "ref", f"{target_key}.head.")
    review_state = read_text(item, "state", f"{item_key}.") if event == "pull_request_review" else ""
    mentioned = bool(mention_name) and f"@{mention_name}".lower() in text.lower()
    kind = "mention" if mentioned else "review-comment"
    state = f" ({review_state})" if review_state else ""
    summary = f"{user} on {repository}#{number}{state}: {text}" if text else f"{user} reviewed {repository}#{number}{state}"
    item_id = read_id(item, "id", f"{item_key}.")
    notification = {
        "source": "github", "kind": kind, "summary": clip(summary),
        "source_id": None if item_id in (None, "") else str(item_id),
        "payload": {"event": event, "repository": repository, "number": number, "user": user, "body": text,
                    "url": item.get("html_url"), "title": title},
    }
    return WebhookEvent(event, delivery_id, notification, DEFAULT_PRIORITIES["github"][kind],
                        {"repository": repository, "number": "" if number is None else str(number), "user": user,
                         "branch": branch})


#: the keys of a payload's main object, in the order they are looked for: a review's payload also
#: holds its pull request, a comment's its issue or pull request
MAIN_OBJECTS = ("workflow_run", "workflow_job", "check_run", "check_suite", "deployment_status", "review",
                "comment", "pull_request", "issue", "discussion", "release")
#: what a comment is on (issue and pull request review comments are counted apart)
COMMENT_TARGETS = ("issue", "pull_request", "discussion")
#: the longest key stored as it is; a longer one is stored as its hash
MAX_EVENT_KEY = 255


def event_key(payload: dict) -> str:
    """The identity of the event in a delivery's (signed) body, whatever its headers say:
    ``<object>:<id>:<action>:<time>:<attempt>``, where the object is the first of
    :data:`MAIN_OBJECTS` in the payload (a comment qualified by what it is on), ``time`` its
    ``updated_at`` (else ``submitted_at``, ``completed_at``) and ``attempt`` its ``run_attempt``.
    Time and attempt tell the genuine repeats of one object apart (a check suite completed again
    after a re-run, a workflow run's next attempt). A payload without such an object is named by
    the hash of its content. The same bytes always give the same key."""
    for name in MAIN_OBJECTS:
        item = payload.get(name)
        if isinstance(item, dict) and isinstance(item.get("id"), (int, str)) and str(item["id"]):
            if name == "comment":
                name += next((f"@{target}" for target in COMMENT_TARGETS if target in payload), "")
            when = item.get("updated_at") or item.get("submitted_at") or item.get("completed_at") or ""
            attempt = item.get("run_attempt")
            key = f"{name}:{item['id']}:{payload.get('action') or ''}:{when}:{'' if attempt is None else attempt}"
            return key if len(key) <= MAX_EVENT_KEY else "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def github_event(event: str, payload: dict, delivery_id: str, *, mention_name: str = "") -> WebhookEvent:
    """The notification (or the reason to ignore it) of one GitHub delivery, with its
    :func:`event_key`."""
    return dataclasses.replace(event_of(event, payload, delivery_id, mention_name), event_key=event_key(payload))


def event_of(event: str, payload: dict, delivery_id: str, mention_name: str) -> WebhookEvent:
    if event == "ping":
        return WebhookEvent(event, delivery_id, ignored="ping", reply={"ok": True, "zen": read_text(payload, "zen")})
    if event in CI_EVENTS:
        return ci_event(event, payload, delivery_id)
    if event in COMMENT_ACTIONS:
        return comment_event(event, payload, delivery_id, mention_name)
    return WebhookEvent(event, delivery_id, ignored=f"event {event!r} is not handled")


def verify(endpoint, headers, raw: bytes) -> str | None:
    """None when the request is signed by the endpoint's secret; else why it is refused."""
    if signature_valid(endpoint.secret, raw, headers.get("X-Hub-Signature-256")):
        return None
    return "the X-Hub-Signature-256 signature does not match"


def delivery_event(endpoint, headers, payload: dict) -> WebhookEvent:
    """The event of one signed request (``missing_event`` / ``missing_delivery_id``: 400)."""
    name = headers.get("X-GitHub-Event") or ""
    if not name:
        raise PayloadError("X-GitHub-Event is missing", code="missing_event")
    delivery_id = (headers.get("X-GitHub-Delivery") or "").strip()
    if not delivery_id:
        raise PayloadError("X-GitHub-Delivery is missing", code="missing_delivery_id")
    return github_event(name, payload, delivery_id, mention_name=endpoint.mention_name)

