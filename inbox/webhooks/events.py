"""What a webhook delivery turns into: a notification for a thread, or the reason it was ignored."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WebhookEvent:
    """``notification`` (without a priority when the default applies) and the ``fields`` the
    endpoint's thread template may use; or ``notification=None`` and ``ignored`` (the reason)."""

    event: str
    delivery_id: str
    notification: dict | None = None
    default_priority: str = "medium"
    fields: dict = field(default_factory=dict)
    ignored: str = ""
    #: a reply the sender expects instead of the usual acknowledgement (Slack's url_verification)
    reply: dict | None = None
    #: the event's own identity, read from the signed body: one delivery per key and endpoint is
    #: stored (empty: the event is not recorded, e.g. Slack's url_verification)
    event_key: str = ""


def clip(text: str, limit: int = 280) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
