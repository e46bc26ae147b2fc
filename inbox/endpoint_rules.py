"""The rules of a webhook endpoint that need nothing but themselves to check: its thread template
and its priority rules (the model's ``clean`` and the admin's form both ask here). Each check
returns a message for the operator, or ``""``. The kinds each sender makes are listed here
(``inbox.webhooks.github`` and ``slack`` make them)."""

from __future__ import annotations

import string
from typing import Any

from agents.runtime.notifications import PRIORITY_RANK

#: the placeholders a thread template may use (an event without the field gives "")
TEMPLATE_FIELDS = ("source", "repository", "branch", "number", "channel", "user")
#: the notification kinds each sender makes, with the priority each gets when the endpoint's
#: ``priority_rules`` do not name it (``inbox.webhooks.github`` and ``slack`` read them here); the
#: rules may name these kinds only
DEFAULT_PRIORITIES: dict[str, dict[str, str]] = {
    "github": {"ci-status": "high", "review-comment": "medium", "mention": "medium"},
    "slack": {"mention": "high", "direct-message": "medium"},
}
#: the priorities, lowest first
PRIORITIES = tuple(sorted(PRIORITY_RANK, key=PRIORITY_RANK.__getitem__))


def thread_template_problem(template: str) -> str:
    """Why ``template`` cannot name a thread: an unknown placeholder, an attribute or index
    (``{repository.name}``), unbalanced braces; ``""`` when it can."""
    allowed = ", ".join("{%s}" % name for name in TEMPLATE_FIELDS)
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"Not a valid template ({exc}); use {allowed}, and {{{{ }}}} for a literal brace."
    for _literal, field, _spec, _conversion in parts:
        if field is None:
            continue
        if field not in TEMPLATE_FIELDS:
            return f"Unknown placeholder {{{field}}}: use {allowed}."
    try:
        template.format(**{name: "" for name in TEMPLATE_FIELDS})
    except (KeyError, IndexError, ValueError) as exc:
        return f"Not a valid template ({exc}); use {allowed}."
    return ""


def priority_rules_problem(rules: Any, source: str) -> str:
    """Why ``rules`` are not ``{kind: priority}`` for ``source``'s kinds; ``""`` when they are."""
    kinds = DEFAULT_PRIORITIES.get(source, {})
    if not isinstance(rules, dict):
        return "Priority rules are an object of kind → priority."
    for kind, priority in rules.items():
        if kind not in kinds:
            known = ", ".join(kinds) or "none"
            return f"Unknown kind {kind!r} for {source or 'this source'} (its kinds: {known})."
        if priority not in PRIORITIES:
            return f"Priority of {kind!r} must be one of {', '.join(PRIORITIES)}, not {priority!r}."
    return ""


__all__ = ["DEFAULT_PRIORITIES", "PRIORITIES", "TEMPLATE_FIELDS", "priority_rules_problem", "thread_template_problem"]
