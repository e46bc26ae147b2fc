"""What a webhook delivery turns into: a notification for a thread, or the reason it was ignored;
and the typed reads of a delivery's fields.

A signed delivery is still data from outside: a field of the wrong type (``repository`` a string,
``issue.number`` an object, Slack's ``event`` a list) is :class:`PayloadError` (``invalid_payload``,
400) before anything is stored, never a 500 that makes the sender deliver it again and again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.runtime.errors import MastraError


class PayloadError(MastraError):
    """A delivery field of the wrong type; the message names the field."""

    code = "invalid_payload"


def read_object(data: dict, key: str, where: str = "") -> dict:
    """``data[key]`` when it is an object, ``{}`` when absent or null."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PayloadError(f"{where}{key} must be an object")
    return value


def read_text(data: dict, key: str, where: str = "") -> str:
    """``data[key]`` when it is a string, ``""`` when absent or null."""
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PayloadError(f"{where}{key} must be a string")
    return value


def read_id(data: dict, key: str, where: str = "") -> int | str | None:
    """``data[key]`` when it is a whole number or a string (an id, an issue number), None when absent."""
    value = data.get(key)
    if value is None or (isinstance(value, (int, str)) and not isinstance(value, bool)):
        return value
    raise PayloadError(f"{where}{key} must be a number or a string")


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
