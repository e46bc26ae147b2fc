"""GitHub: the request check, what a webhook delivery means, and the REST calls of the outbox and
of the handoff, all through ``githubkit``.

Deliveries: ``ping`` → 200; ``issue_comment`` and ``pull_request_review_comment`` (created),
``pull_request_review`` (submitted, with a body), ``issues`` and ``pull_request`` (opened): the agent
answers when ``@<bot_login>`` is mentioned, or in an issue or pull request conversation it already
takes part in. One issue or pull request is one memory thread (``owner/repo#number``); a review
comment belongs to its pull request's thread. ``/approve`` and ``/deny`` replies decide the
thread's pending approval card. Only the repository's trusted people start runs
(``author_association`` in the adapter's ``trusted``, by default OWNER, MEMBER, COLLABORATOR);
anyone else, the bot itself and other bots are ignored (and logged).

``X-Hub-Signature-256`` is checked first; ``X-GitHub-Delivery`` is the event's id.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from typing import Mapping

from agents.runtime.channels.text import github_thread_key, mentions

from .inbound import COMMAND, MENTION, SUBSCRIBED, Inbound, PayloadError, ignored, read_id, read_object, read_text

#: the event, the action it is answered on, the payload key of the text's object, and the key of
#: the issue or pull request it belongs to
EVENTS = {
    "issue_comment": ("created", "comment", "issue"),
    "pull_request_review_comment": ("created", "comment", "pull_request"),
    "pull_request_review": ("submitted", "review", "pull_request"),
    "issues": ("opened", "issue", "issue"),
    "pull_request": ("opened", "pull_request", "pull_request"),
}
#: the reaction endpoint of each triggering object (a review has none)
REACTION_TARGETS = {"issue_comment": "issue_comment", "pull_request_review_comment": "review_comment",
                    "issues": "issue", "pull_request": "issue"}
COMMAND_LINE = re.compile(r"^\s*/(approve|deny)\b", re.IGNORECASE)
MARKER = "<!-- mastra:{key} -->"
#: permissions that count as write access to a repository
WRITE_PERMISSIONS = ("admin", "maintain", "write")


def signature_valid(secret: str, body: bytes, header: str | None) -> bool:
    if not header or not header.startswith("sha256=") or not secret:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def verify(adapter, headers: Mapping[str, str], raw: bytes) -> str | None:
    if signature_valid(adapter.webhook_secret, raw, headers.get("X-Hub-Signature-256")):
        return None
    return "the X-Hub-Signature-256 signature does not match"


def is_bot(user: dict, bot_login: str | None) -> bool:
    login = (user.get("login") or "") if isinstance(user, dict) else ""
    return (user.get("type") == "Bot" or login.endswith("[bot]")
            or (bool(bot_login) and login.lower() == (bot_login or "").lower()))


def inbound(adapter, headers: Mapping[str, str], raw: bytes) -> Inbound:
    """What one verified GitHub delivery means (see the module docstring)."""
    name = headers.get("X-GitHub-Event") or ""
    if not name:
        raise PayloadError("X-GitHub-Event is missing", code="missing_event")
    delivery = (headers.get("X-GitHub-Delivery") or "").strip()
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise PayloadError("the body is not JSON", code="invalid_json") from None
    if not isinstance(payload, dict):
        raise PayloadError("the payload must be a JSON object", code="invalid_json")
    if name == "ping":
        return Inbound(reply={"ok": True, "zen": read_text(payload, "zen")})
    if not delivery:
        raise PayloadError("X-GitHub-Delivery is missing", code="missing_delivery_id")
    if name not in EVENTS:
        return ignored(f"event {name!r} is not handled")
    action, item_key, target_key = EVENTS[name]
    if read_text(payload, "action") != action:
        return ignored(f"{name} {read_text(payload, 'action') or None} is not answered")
    item, target = read_object(payload, item_key), read_object(payload, target_key)
    user = read_object(item, "user", f"{item_key}.")
    login = read_text(user, "login", f"{item_key}.user.")
    if is_bot(user, adapter.bot_login):
        return ignored(f"a comment of a bot ({login}) is not answered")
    body = read_text(item, "body", f"{item_key}.")
    repository = read_text(read_object(payload, "repository"), "full_name", "repository.")
    number = read_id(target, "number", f"{target_key}.")
    item_id = read_id(item, "id", f"{item_key}.")
    if not repository or number is None or item_id is None:
        raise PayloadError("repository.full_name, the issue or pull request number and the item id are required")
    installation = read_id(read_object(payload, "installation"), "id", "installation.")
    association = read_text(item, "author_association", f"{item_key}.").upper()
    thread_key = github_thread_key(repository, number)
    common = {"event_id": delivery, "message_key": f"{item_key}:{item_id}", "thread_key": thread_key,
              "target": {"repository": repository, "number": int(number),
                         "installation": None if installation is None else int(installation)},
              "bucket": f"github:{installation if installation is not None else repository.split('/')[0]}"}
    details = {"user": login, "text": body, "association": association, "event": name, "item_id": item_id,
               "reaction": REACTION_TARGETS.get(name), "url": read_text(item, "html_url", f"{item_key}.")}
    command = COMMAND_LINE.match(body or "")
    if command:
        return Inbound(kind=COMMAND, needs_thread=True, **common,
                       payload={**details, "decision": "approved" if command.group(1).lower() == "approve"
                                else "declined"})
    if not body.strip():
        return ignored(f"{name} without text")
    if association not in adapter.trusted:
        return ignored(f"{login} ({association or 'no association'}) is not trusted to start a run")
    mentioned = mentions(body, adapter.bot_login or "")
    return Inbound(kind=MENTION if mentioned else SUBSCRIBED, needs_thread=not mentioned, **common, payload=details)


# -- REST calls ------------------------------------------------------------------------------------
def marker(key: str) -> str:
    return MARKER.format(key=key)


def owner_repo(target: dict) -> tuple[str, str]:
    owner, _, repo = target["repository"].partition("/")
    return owner, repo


async def comment_find(client, *, target: dict, key: str) -> str | None:
    """The id of the comment an outbox row with ``key`` created on the issue, if GitHub has it."""
    owner, repo = owner_repo(target)
    tag = marker(key)
    page = 1
    while True:
        response = await client.rest.issues.async_list_comments(owner, repo, target["number"], per_page=100, page=page)
        comments = response.json()
        for comment in comments:
            if tag in (comment.get("body") or ""):
                return str(comment["id"])
        if len(comments) < 100:
            return None
        page += 1


async def comment_create(client, *, target: dict, key: str, body: str) -> str:
    owner, repo = owner_repo(target)
    response = await client.rest.issues.async_create_comment(owner, repo, target["number"],
                                                             body=f"{body}\n\n{marker(key)}")
    return str(response.json()["id"])


async def comment_update(client, *, target: dict, key: str, comment_id: str, body: str) -> None:
    owner, repo = owner_repo(target)
    await client.rest.issues.async_update_comment(owner, repo, int(comment_id), body=f"{body}\n\n{marker(key)}")


async def reaction_add(client, *, target: dict) -> None:
    """👀 on the triggering comment (``target``: ``reaction`` kind and ``item_id``)."""
    owner, repo = owner_repo(target)
    kind, item = target["reaction"], int(target["item_id"])
    reactions = client.rest.reactions
    if kind == "issue_comment":
        await reactions.async_create_for_issue_comment(owner, repo, item, content="eyes")
    elif kind == "review_comment":
        await reactions.async_create_for_pull_request_review_comment(owner, repo, item, content="eyes")
    else:
        await reactions.async_create_for_issue(owner, repo, target["number"], content="eyes")


async def has_write_access(client, *, repository: str, login: str) -> bool:
    owner, _, repo = repository.partition("/")
    response = await client.rest.repos.async_get_collaborator_permission_level(owner, repo, login)
    return (response.json() or {}).get("permission") in WRITE_PERMISSIONS


def retry_after(exc) -> float | None:
    """The wait a rate-limit answer asks (429, or a 403 with ``Retry-After`` or an exhausted
    ``x-ratelimit-remaining``), or None for any other failure."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    headers = getattr(response, "headers", None) or {}
    if status not in (403, 429):
        return None
    if headers.get("retry-after") is not None:
        try:
            return max(0.0, float(headers["retry-after"]))
        except ValueError:
            return 60.0
    if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
        try:
            return max(0.0, float(headers["x-ratelimit-reset"]) - time.time())
        except ValueError:
            return 60.0
    return 60.0 if status == 429 else None


def error_text(exc) -> str:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status is None:
        return f"{type(exc).__name__}: {exc}"
    try:
        message = (response.json() or {}).get("message")
    except Exception:  # a body that is not JSON
        message = None
    return f"HTTP {status}: {message or response.text[:200]}"


def permanent(exc) -> bool:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status in (401, 404, 410, 422)


__all__ = ["COMMAND_LINE", "EVENTS", "WRITE_PERMISSIONS", "comment_create", "comment_find", "comment_update",
           "error_text", "has_write_access", "inbound", "is_bot", "marker", "permanent", "reaction_add",
           "retry_after", "signature_valid", "verify"]
