"""What an approval looks like on each platform: a Block Kit card with Approve / Deny on Slack
(text when the adapter has ``cards=False``), a comment asking for ``/approve`` or ``/deny`` on
GitHub; and the card once decided (no buttons left to click)."""

from __future__ import annotations

import json

APPROVE, DENY = "mastra_approve", "mastra_deny"
MAX_ARGS = 2500


def args_text(args) -> str:
    text = json.dumps(args, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_ARGS else text[:MAX_ARGS - 1] + "…"


def binding(approval) -> str:
    """The value a button carries: the approval and the exact call it is bound to."""
    return json.dumps({"approval": approval.pk, "run": approval.run_id, "call": approval.tool_call_id,
                       "hash": approval.args_hash}, separators=(",", ":"))


def card_pending(approval, *, platform: str, cards: bool = True) -> tuple[str, list | None]:
    """``(text, blocks)`` of a pending approval."""
    args = args_text(approval.args)
    if platform == "github":
        return (f"**Approval needed**: the agent wants to run `{approval.tool_name}` with\n\n```json\n{args}\n```\n\n"
                "Reply `/approve` or `/deny` (people with write access to this repository decide)."), None
    text = f"Approval needed: the agent wants to run {approval.tool_name}"
    if not cards:
        return (f"{text} with\n```{args}```\nDecide it in the chat page or the admin "
                "(approval cards are off for this app)."), None
    value = binding(approval)
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn",
                                     "text": f"*Approval needed*: the agent wants to run `{approval.tool_name}` with\n```{args}```"}},
        {"type": "actions", "block_id": "mastra_approval", "elements": [
            {"type": "button", "action_id": APPROVE, "style": "primary", "value": value,
             "text": {"type": "plain_text", "text": "Approve"}},
            {"type": "button", "action_id": DENY, "style": "danger", "value": value,
             "text": {"type": "plain_text", "text": "Deny"}},
        ]},
    ]
    return text, blocks


def who(platform: str, user: str) -> str:
    return f"<@{user}>" if platform == "slack" else f"@{user}"


def card_decided(approval, *, platform: str) -> tuple[str, list | None]:
    """``(text, blocks)`` of a decided (or stale) approval: the buttons are gone."""
    if approval.status == "approved":
        text = f"Approved by {who(platform, approval.decided_by)}: `{approval.tool_name}` runs."
    elif approval.status == "declined":
        text = f"Denied by {who(platform, approval.decided_by)}: `{approval.tool_name}` does not run."
    else:
        text = f"This approval of `{approval.tool_name}` is no longer current (the run moved on)."
    if platform == "github":
        return f"{text}\n\n```json\n{args_text(approval.args)}\n```", None
    return text, [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


__all__ = ["APPROVE", "DENY", "binding", "card_decided", "card_pending"]
