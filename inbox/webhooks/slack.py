"""Slack Events API: the ``X-Slack-Signature`` (v0) check with its timestamp (``slack_sdk``'s
:class:`SignatureVerifier`), and the events that become notifications.

- ``url_verification`` → the challenge echoed, nothing stored;
- ``event_callback`` with ``app_mention`` → kind ``mention``, priority ``high``;
- ``event_callback`` with a direct message (``message`` in an ``im`` channel, not a bot's or an
  edit) → kind ``direct-message``, priority ``medium``;
- anything else → ignored.

A request whose timestamp is more than five minutes from now is refused (a replay). Within the five
minutes, a replay (or a retry) carries the same ``event_id`` (in the signed body): the event's key,
stored once per endpoint. An ``event_callback`` without an ``event_id`` is refused by the view. A
field of the wrong type (``event`` a list, ``event.text`` a number) is ``invalid_payload`` (400),
nothing stored.
"""

from __future__ import annotations

import dataclasses
import time

from slack_sdk.signature import Clock, SignatureVerifier

from ..endpoint_rules import DEFAULT_PRIORITIES
from .events import PayloadError, WebhookEvent, clip, read_object, read_text

#: how far a request's timestamp may be from now (Slack's advice, and slack_sdk's check: five minutes)
MAX_SKEW_S = 300


class SlackClock(Clock):
    """``slack_sdk``'s clock on a verifier's ``timer``."""

    def __init__(self, timer):
        self.timer = timer

    def now(self) -> float:
        return self.timer()


class SlackVerifier:
    """Checks a request's signature with ``slack_sdk``'s :class:`SignatureVerifier`; ``timer``
    (seconds since the epoch) is injectable for tests. The freshness is checked first, to say why
    a request is refused."""

    timer = staticmethod(time.time)

    def problem(self, secret: str, body: bytes, timestamp: str | None, signature: str | None) -> str | None:
        """None when the request is signed by ``secret`` and fresh; else why it is refused."""
        if not timestamp or not signature or not secret:
            return "missing signature headers"
        try:
            sent = int(timestamp)
        except ValueError:
            return "bad timestamp"
        if abs(self.timer() - sent) > MAX_SKEW_S:
            return "the request timestamp is more than five minutes old"
        checker = SignatureVerifier(secret, clock=SlackClock(self.timer))
        if not checker.is_valid(body, timestamp, signature.strip()):
            return "the signature does not match"
        return None


verifier = SlackVerifier()


def slack_event(payload: dict) -> WebhookEvent:
    """The notification (or the reason to ignore it) of one Slack Events API request
    (``invalid_payload`` for a field of the wrong type); its key is its ``event_id`` (none for a
    request without one, such as ``url_verification``)."""
    event = event_of(payload)
    return dataclasses.replace(event, event_key=f"event_id:{event.delivery_id}" if event.delivery_id else "")


def event_of(payload: dict) -> WebhookEvent:
    kind = read_text(payload, "type")
    if kind == "url_verification":
        return WebhookEvent("url_verification", "", ignored="url_verification",
                            reply={"challenge": read_text(payload, "challenge")})
    event = read_object(payload, "event")
    delivery_id = read_text(payload, "event_id")
    name = read_text(event, "type", "event.") or kind
    if kind != "event_callback":
        return WebhookEvent(kind, delivery_id, ignored=f"request type {kind!r} is not handled")
    channel, user = read_text(event, "channel", "event."), read_text(event, "user", "event.")
    text = read_text(event, "text", "event.")
    fields = {"channel": channel, "user": user}
    if name == "app_mention":
        notification_kind = "mention"
    elif name == "message" and read_text(event, "channel_type", "event.") == "im":
        if event.get("bot_id") or event.get("subtype"):
            return WebhookEvent("message.im", delivery_id, ignored="a bot message or an edit")
        notification_kind, name = "direct-message", "message.im"
    else:
        return WebhookEvent(name, delivery_id, ignored=f"event {name!r} is not handled")
    notification = {
        "source": "slack", "kind": notification_kind, "summary": clip(f"{user} in {channel}: {text}"),
        "source_id": delivery_id or None,
        "payload": {"event": name, "channel": channel, "user": user, "text": text, "ts": event.get("ts"),
                    "team": payload.get("team_id")},
    }
    return WebhookEvent(name, delivery_id, notification, DEFAULT_PRIORITIES["slack"][notification_kind], fields)


def verify(endpoint, headers, raw: bytes) -> str | None:
    """None when the request is signed by the endpoint's secret and fresh; else why it is refused."""
    return verifier.problem(endpoint.secret, raw, headers.get("X-Slack-Request-Timestamp"),
                            headers.get("X-Slack-Signature"))


def delivery_event(endpoint, headers, payload: dict) -> WebhookEvent:
    """The event of one signed request (``missing_event_id``: 400 for an event without its id)."""
    if payload.get("type") == "event_callback" and not payload.get("event_id"):
        raise PayloadError("an event_callback without an event_id", code="missing_event_id")
    return slack_event(payload)

