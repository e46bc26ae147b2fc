"""The pure rules of a channel conversation: thread keys, sender prefixes, mentions, splitting an
answer at the platform's limit and the pacing of its edits."""

from __future__ import annotations

import re

#: the longest text of one Slack message this project posts (Slack advises under 4,000 characters)
SLACK_TEXT_LIMIT = 4000
#: the longest GitHub comment body (GitHub refuses past 65,536 characters; room for the marker)
GITHUB_BODY_LIMIT = 65000
#: at most one edit of a message per this many seconds while its answer grows
EDIT_INTERVAL_S = {"slack": 1.0, "github": 2.0}
#: what a failed run posts (once) in its thread
FAILED_TEXT = "Sorry, I could not finish this answer ({reason})."
MAX_REASON = 200


def slack_thread_key(team: str, channel: str, root_ts: str) -> str:
    """One Slack thread: its team, channel and root message's ts."""
    return f"{team}:{channel}:{root_ts}"


def github_thread_key(repository: str, number: int | str) -> str:
    """One issue or pull request: ``owner/repo#number``."""
    return f"{repository}#{number}"


def sender_prefix(name: str, user: str) -> str:
    """``[Alice (@U123)]: `` (Mastra's multi-user prefix); the name falls back to the id."""
    name = " ".join((name or "").split()) or user
    return f"[{name} (@{user})]: "


def mentions(text: str, login: str) -> bool:
    """Whether ``text`` mentions ``@login`` (GitHub's rule: not inside another word or login)."""
    if not login:
        return False
    return re.search(rf"(?<![\w@-])@{re.escape(login)}(?![\w-])", text or "", re.IGNORECASE) is not None


def split_text(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut at the last newline (else space) of
    each part when there is one in its second half. A part, once followed by another, never
    changes as the text grows. An empty text is one empty part."""
    if limit < 2:
        raise ValueError("limit must be at least 2")
    parts = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind("\n"), window.rfind(" ") if "\n" not in window[limit // 2:] else -1)
        if cut < limit // 2:
            cut = limit
        else:
            cut += 1
        parts.append(text[:cut])
        text = text[cut:]
    parts.append(text)
    return parts


def failed_text(reason: str) -> str:
    reason = " ".join((reason or "error").split())
    if len(reason) > MAX_REASON:
        reason = reason[:MAX_REASON - 1] + "…"
    return FAILED_TEXT.format(reason=reason)


__all__ = ["EDIT_INTERVAL_S", "FAILED_TEXT", "GITHUB_BODY_LIMIT", "SLACK_TEXT_LIMIT", "failed_text",
           "github_thread_key", "mentions", "sender_prefix", "slack_thread_key", "split_text"]
