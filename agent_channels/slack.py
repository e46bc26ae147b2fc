"""Slack: the request check, what an Events API or interactivity request means, and the Web API
calls of the outbox and of the handoff, all through ``slack_sdk``.

Requests: ``url_verification`` → its challenge; ``event_callback`` with ``app_mention`` (a
mention: the thread is the mention's thread, or a new one rooted at its ts), ``message`` in a DM
(``im``), ``message`` in a channel thread the agent already answers in (subscribed); a message
with a ``subtype`` (edits, deletions, bot messages) or a ``bot_id`` is not answered; interactivity
(``block_actions``, form-encoded ``payload=``) → the approval cards (``approvals``).

The signature (``v0``, ``X-Slack-Request-Timestamp`` within five minutes) is checked before
anything is parsed or stored, by ``slack_sdk``'s :class:`SignatureVerifier`.
"""

from __future__ import annotations

import json
from typing import Mapping
from urllib.parse import parse_qs

from slack_sdk.errors import SlackApiError

from agents.runtime.channels.text import slack_thread_key
from inbox.webhooks.slack import verifier

from .inbound import (ACTION, DIRECT, MENTION, SUBSCRIBED, Inbound, PayloadError, ignored, read_object,
                      read_text)

#: the metadata event type that carries an outbox row's key on the messages it posts
METADATA_TYPE = "mastra_outbox"
#: Slack errors that no retry cures: the row fails at once
PERMANENT_ERRORS = frozenset({"channel_not_found", "not_in_channel", "is_archived", "invalid_auth", "not_authed",
                              "account_inactive", "token_revoked", "msg_too_long", "message_not_found",
                              "cant_update_message", "invalid_blocks", "no_text", "user_not_in_channel"})


def verify(adapter, headers: Mapping[str, str], raw: bytes) -> str | None:
    """None when the request is signed with the adapter's signing secret and fresh; else why not
    (the inbox's verifier: ``slack_sdk``'s check, with the reason told apart)."""
    return verifier.problem(adapter.signing_secret, raw, headers.get("X-Slack-Request-Timestamp"),
                            headers.get("X-Slack-Signature"))


def request_payload(headers: Mapping[str, str], raw: bytes) -> dict:
    """The request's JSON: the body, or the ``payload`` field of a form-encoded interactivity request."""
    kind = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    try:
        if kind == "application/x-www-form-urlencoded":
            fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True)
            data = json.loads((fields.get("payload") or [""])[0])
        else:
            data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise PayloadError("the body is not JSON (nor a form with a JSON payload)", code="invalid_json") from None
    if not isinstance(data, dict):
        raise PayloadError("the payload must be a JSON object", code="invalid_json")
    return data


def inbound(adapter, headers: Mapping[str, str], raw: bytes) -> Inbound:
    """What one verified Slack request means (see the module docstring)."""
    payload = request_payload(headers, raw)
    kind = read_text(payload, "type")
    if kind == "url_verification":
        return Inbound(reply={"challenge": read_text(payload, "challenge")})
    if kind == "block_actions":
        return action_inbound(payload)
    if kind != "event_callback":
        return ignored(f"request type {kind!r} is not handled")
    event_id = read_text(payload, "event_id")
    if not event_id:
        raise PayloadError("an event_callback without an event_id", code="missing_event_id")
    event = read_object(payload, "event")
    name = read_text(event, "type", "event.")
    if name not in ("app_mention", "message"):
        return ignored(f"event {name!r} is not handled")
    if event.get("subtype") is not None:
        return ignored(f"a message {read_text(event, 'subtype', 'event.')} is not answered")
    if event.get("bot_id") is not None:
        return ignored("a bot's message is not answered")
    team = read_text(payload, "team_id") or read_text(event, "team", "event.")
    channel, user = read_text(event, "channel", "event."), read_text(event, "user", "event.")
    ts, thread_ts = read_text(event, "ts", "event."), read_text(event, "thread_ts", "event.")
    if not (channel and user and ts):
        raise PayloadError("event.channel, event.user and event.ts are required")
    channel_type = read_text(event, "channel_type", "event.")
    if name == "app_mention":
        what = MENTION
    elif channel_type == "im":
        what = DIRECT
    elif thread_ts and thread_ts != ts:
        what = SUBSCRIBED
    else:
        return ignored("a channel message outside a thread the agent answers in")
    root = thread_ts or ts
    target = {"team": team, "channel": channel, "thread_ts": root}
    return Inbound(kind=what, event_id=event_id, message_key=f"{team}:{channel}:{ts}",
                   thread_key=slack_thread_key(team, channel, root), needs_thread=what == SUBSCRIBED,
                   target=target, bucket=f"slack:{team}",
                   payload={"user": user, "text": read_text(event, "text", "event."), "ts": ts,
                            "thread_ts": thread_ts, "channel": channel, "team": team,
                            "existing_thread": bool(thread_ts and thread_ts != ts)})


def action_inbound(payload: dict) -> Inbound:
    """A ``block_actions`` click: the card's action (its value binds the click to the approval,
    the run, the tool call and the args hash), the user, and where."""
    user = read_object(payload, "user")
    actions = payload.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        raise PayloadError("block_actions needs actions")
    action = actions[0]
    try:
        value = json.loads(read_text(action, "value", "actions[0]."))
    except ValueError:
        value = None
    if not isinstance(value, dict):
        value = {}
    container = read_object(payload, "container")
    channel = read_object(payload, "channel")
    team = read_object(payload, "team")
    return Inbound(kind=ACTION, payload={
        "user": read_text(user, "id", "user."), "action": read_text(action, "action_id", "actions[0]."),
        "value": value, "channel": read_text(channel, "id", "channel.") or read_text(container, "channel_id"),
        "message_ts": read_text(container, "message_ts", "container."), "team": read_text(team, "id", "team.")})


# -- Web API calls ---------------------------------------------------------------------------------
def retry_after(exc: SlackApiError) -> float | None:
    """The seconds a 429 asks to wait (``Retry-After``), or None when it is no rate limit."""
    response = exc.response
    if getattr(response, "status_code", None) != 429:
        return None
    headers = {k.lower(): v for k, v in (getattr(response, "headers", None) or {}).items()}
    value = headers.get("retry-after")
    if isinstance(value, list):
        value = value[0] if value else None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return 1.0


def error_text(exc: SlackApiError) -> str:
    response = exc.response
    data = getattr(response, "data", None)
    error = data.get("error") if isinstance(data, dict) else None
    return error or str(exc)


def permanent(exc: SlackApiError) -> bool:
    return error_text(exc) in PERMANENT_ERRORS


def metadata_for(key: str) -> dict:
    return {"event_type": METADATA_TYPE, "event_payload": {"key": key}}


async def message_find(client, *, channel: str, thread_ts: str, key: str) -> str | None:
    """The ts of the message an outbox row with ``key`` posted in the thread, if Slack has it."""
    cursor = None
    while True:
        response = await client.conversations_replies(channel=channel, ts=thread_ts, include_all_metadata=True,
                                                      limit=200, **({"cursor": cursor} if cursor else {}))
        for message in response.get("messages") or []:
            metadata = message.get("metadata") or {}
            if metadata.get("event_type") == METADATA_TYPE and (metadata.get("event_payload") or {}).get("key") == key:
                return message.get("ts")
        cursor = ((response.get("response_metadata") or {}).get("next_cursor")) or None
        if not cursor:
            return None


async def message_post(client, *, target: dict, key: str, text: str, blocks: list | None) -> str:
    response = await client.chat_postMessage(channel=target["channel"], thread_ts=target.get("thread_ts") or None,
                                             text=text, blocks=blocks, metadata=metadata_for(key),
                                             unfurl_links=False, unfurl_media=False)
    return response["ts"]


async def message_update(client, *, target: dict, ts: str, text: str, blocks: list | None) -> None:
    await client.chat_update(channel=target["channel"], ts=ts, text=text, **({"blocks": blocks} if blocks is not None else {}))


async def ephemeral_post(client, *, target: dict, text: str) -> None:
    await client.chat_postEphemeral(channel=target["channel"], user=target["user"], text=text,
                                    thread_ts=target.get("thread_ts") or None)


async def thread_history(client, *, channel: str, thread_ts: str, before_ts: str, limit: int) -> list[dict]:
    """The last ``limit`` messages of the thread before ``before_ts`` (oldest first)."""
    response = await client.conversations_replies(channel=channel, ts=thread_ts, limit=min(1000, limit + 50))
    messages = [m for m in response.get("messages") or [] if isinstance(m, dict) and m.get("ts") != before_ts
                and float(m.get("ts") or 0) < float(before_ts or 0)]
    return messages[-limit:] if limit else []


__all__ = ["METADATA_TYPE", "action_inbound", "ephemeral_post", "error_text", "inbound", "message_find",
           "message_post", "message_update", "permanent", "request_payload", "retry_after",
           "thread_history", "verify"]
