"""The editor locks of a code-defined agent (its ``editor`` option), as Mastra defines them.

- ``editor`` omitted (``None``): instructions and tools (membership and descriptions) are editable;
- ``editor=False``: nothing is editable;
- ``{"instructions": True}``: only the instructions;
- ``{"tools": True}``: the tool membership and the tool descriptions;
- ``{"tools": {"description": True}}``: only the tool descriptions;
- keys combine (``{"instructions": True, "tools": {"description": True}}``); a key left out is locked.

``id``, ``name`` and ``model`` always come from code. Overrides hold three fields:
``instructions`` (a string), ``tools`` (a list of tool names) and ``tool_descriptions``
(``{tool name: description}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the fields an override may hold, in display order
OVERRIDE_FIELDS = ("instructions", "tools", "tool_descriptions")
#: what the admin shows beside a stored override its agent's code now locks
IGNORED_LABEL = "ignored: locked by code"


@dataclass(frozen=True)
class EditorLocks:
    """Which override fields an agent's code lets the editor change (True: editable)."""

    instructions: bool
    tools: bool
    tool_descriptions: bool

    @classmethod
    def of(cls, editor: Any) -> "EditorLocks":
        """The locks of an ``editor`` option (already validated by ``Agent()``)."""
        if editor is None:
            return cls(True, True, True)
        if editor is False:
            return cls(False, False, False)
        tools = editor.get("tools", False)
        if isinstance(tools, dict):
            return cls(bool(editor.get("instructions", False)), False, bool(tools.get("description", False)))
        return cls(bool(editor.get("instructions", False)), bool(tools), bool(tools))

    def editable(self, field: str) -> bool:
        return bool(getattr(self, field))

    @property
    def editable_fields(self) -> tuple[str, ...]:
        return tuple(f for f in OVERRIDE_FIELDS if self.editable(f))

    @property
    def read_only(self) -> bool:
        return not self.editable_fields

    def strip(self, overrides: dict) -> tuple[dict, list[str]]:
        """``(kept, ignored)``: the overrides this agent's locks allow, and the names of the
        fields present that the code locks (in :data:`OVERRIDE_FIELDS` order)."""
        kept = {f: overrides[f] for f in OVERRIDE_FIELDS if f in overrides and self.editable(f)}
        ignored = [f for f in OVERRIDE_FIELDS if f in overrides and not self.editable(f)]
        return kept, ignored

    def describe(self) -> str:
        """A short human summary (``"instructions, tool descriptions"`` / ``"read-only"``)."""
        if self.read_only:
            return "read-only"
        names = {"instructions": "instructions", "tools": "tool membership", "tool_descriptions": "tool descriptions"}
        return ", ".join(names[f] for f in self.editable_fields)


__all__ = ["EditorLocks", "IGNORED_LABEL", "OVERRIDE_FIELDS"]
