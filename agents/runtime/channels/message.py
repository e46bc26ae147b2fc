"""The message a channel handler gets (``channels={"handlers": {"on_mention": handler}}``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ChannelMessage:
    """One platform message on its way to the agent.

    ``kind``: ``mention``, ``dm`` or ``subscribed``; ``user`` the platform's user id (a GitHub
    login), ``user_name`` the name shown in the prefix; ``text`` as the platform sent it;
    ``contents`` what the agent receives (the sender prefix, and on a first mention in an existing
    Slack thread the thread's earlier messages before it). A handler may pass a changed copy
    (``dataclasses.replace(message, contents=...)``) to ``default``."""

    platform: str
    kind: str
    thread_key: str
    resource_id: str
    thread_id: str
    user: str
    user_name: str
    text: str
    contents: str
    details: dict = field(default_factory=dict)


__all__ = ["ChannelMessage"]
