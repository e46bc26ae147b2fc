"""The editor's errors, each with a stable ``code`` (``MastraError``'s contract)."""

from __future__ import annotations

from agents.runtime.errors import MastraError


class EditorError(MastraError):
    code = "editor_error"


class InvalidOverride(EditorError):
    """An override's value is not acceptable; ``field`` names it (``instructions``, ``tools``,
    ``tool_descriptions.<tool>``)."""

    code = "invalid_override"

    def __init__(self, field: str, problem: str):
        super().__init__(problem, details={"field": field})
        self.field = field


class LockedField(EditorError):
    """An edit of a field the agent's code (its ``editor`` option) or the user's permissions lock."""

    code = "editor_locked"

    def __init__(self, field: str, why: str):
        super().__init__(f"{field} cannot be edited: {why}", details={"field": field})
        self.field = field


class StaleVersion(EditorError):
    """A save based on a version older than the agent's latest (optimistic locking)."""

    code = "stale_version"


class VersionNotFound(EditorError):
    code = "version_not_found"


__all__ = ["EditorError", "InvalidOverride", "LockedField", "StaleVersion", "VersionNotFound"]
