"""The one place the notification package reaches into the thread runtime: the agent's thread
runtime, the thread key, and the check of ``if_idle`` options. Everything else of the package (and
``inbox``) goes through these three functions."""

from __future__ import annotations

from typing import Any

from ..threads import IF_IDLE, parse_branch, thread_key


def thread_runtime(agent: Any, what: str) -> Any:
    """The thread runtime ``agent`` sends through; AgentConfigError when the agent has no memory
    (``what`` names the call in the message)."""
    return agent.thread_runtime(what)


def check_if_idle(if_idle: dict | None) -> None:
    """Raise SignalError now, rather than after storing, when ``if_idle`` is not valid options."""
    parse_branch(if_idle, IF_IDLE, "if_idle")


def notification_thread_key(resource_id: str, thread_id: str) -> str:
    """The key of the thread a notification targets (the thread runtime's ``thread_key``)."""
    return thread_key(resource_id, thread_id)
