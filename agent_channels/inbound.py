"""What a verified platform request means (:class:`Inbound`) and the typed reads of its fields.

A signed request is still data from outside: a field of the wrong type is
:class:`~inbox.webhooks.events.PayloadError` (``invalid_payload``, 400), nothing stored."""

from __future__ import annotations

from dataclasses import dataclass, field

from inbox.webhooks.events import PayloadError, read_id, read_object, read_text

#: what an inbound message asks for
MENTION, DIRECT, SUBSCRIBED, COMMAND, ACTION = "mention", "dm", "subscribed", "command", "action"
#: the handler of each kind (``channels={"handlers": {...}}``)
HANDLER_OF = {MENTION: "on_mention", DIRECT: "on_direct_message", SUBSCRIBED: "on_subscribed_message"}


@dataclass(frozen=True)
class Inbound:
    """One platform request: a ``reply`` it expects at once (Slack's url_verification, GitHub's
    ping), or why it is ``ignored``, or a message to store once (``event_id``, ``message_key``) and
    hand to the agent. ``needs_thread``: it is answered only in a thread the agent already takes
    part in (Slack's subscribed threads, a GitHub conversation without a mention)."""

    reply: dict | None = None
    ignored: str = ""
    kind: str = ""
    event_id: str = ""
    message_key: str | None = None
    thread_key: str = ""
    needs_thread: bool = False
    #: where answers go (``ChannelThread.target``) and the pacing bucket of its writes
    target: dict = field(default_factory=dict)
    bucket: str = ""
    #: what the handoff needs: the sender, the text, the platform ids
    payload: dict = field(default_factory=dict)


def ignored(reason: str) -> Inbound:
    return Inbound(ignored=reason)


__all__ = ["ACTION", "COMMAND", "DIRECT", "HANDLER_OF", "Inbound", "MENTION", "PayloadError", "SUBSCRIBED",
           "ignored", "read_id", "read_object", "read_text"]
