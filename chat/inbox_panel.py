"""Writes of the chat page's notifications panel: mark read, mark all read, dismiss (the caller's own
records)."""

from __future__ import annotations

from agents.access import Caller
from inbox.services import notification_dismiss, notification_mark_seen

from .selectors import notification_ids_of, unread_notification_ids

ACTIONS = {"read": notification_mark_seen, "dismiss": notification_dismiss}


def panel_update(*, caller: Caller, record_id: str, action: str) -> int:
    """Apply ``action`` (``read`` or ``dismiss``) to one record of the caller's; returns how many
    records changed (0: not the caller's, or already filed). ``KeyError`` for an unknown action."""
    update = ACTIONS[action]
    ids = notification_ids_of(caller=caller, ids=[record_id])
    return update(ids=ids) if ids else 0


def panel_read_all(*, caller: Caller) -> int:
    """Mark every record of the caller's that is not read yet (pending or delivered) as seen;
    returns how many changed."""
    ids = unread_notification_ids(caller=caller)
    return notification_mark_seen(ids=ids) if ids else 0
