"""Who is who on Slack, cached per process: the app's own bot user (``auth.test``) and users'
display names (``users.info``, kept for an hour). A name is only ever read from Slack, never from a
message's text."""

from __future__ import annotations

import hashlib
import time

NAME_TTL_S = 3600.0
MAX_NAMES = 10_000

#: {adapter key: (bot user id, bot id)}
_bots: dict[str, tuple[str, str]] = {}
#: {(adapter key, user id): (name, read at)}
_names: dict[tuple[str, str], tuple[str, float]] = {}


def adapter_key(adapter) -> str:
    """A key for the adapter's workspace that does not hold its token."""
    return hashlib.sha256(f"{adapter.api_url}\x1f{adapter.bot_token}".encode()).hexdigest()[:32]


async def slack_bot(adapter) -> tuple[str, str]:
    """``(user_id, bot_id)`` of the app's bot user, from ``auth.test`` once per process."""
    key = adapter_key(adapter)
    if key not in _bots:
        response = await adapter.client().auth_test()
        _bots[key] = (response.get("user_id") or "", response.get("bot_id") or "")
    return _bots[key]


async def slack_user_name(adapter, user: str, *, timer=time.monotonic) -> str:
    """The user's display name (else real name, else user name, else the id)."""
    key = (adapter_key(adapter), user)
    cached = _names.get(key)
    if cached is not None and timer() - cached[1] < NAME_TTL_S:
        return cached[0]
    response = await adapter.client().users_info(user=user)
    info = response.get("user") or {}
    profile = info.get("profile") or {}
    name = (profile.get("display_name") or profile.get("real_name") or info.get("real_name") or info.get("name")
            or user)
    if len(_names) >= MAX_NAMES:
        _names.clear()
    _names[key] = (name, timer())
    return name


def identities_forget() -> None:
    """Forget every cached identity (tests, or after rotating a token)."""
    _bots.clear()
    _names.clear()


__all__ = ["identities_forget", "slack_bot", "slack_user_name"]
