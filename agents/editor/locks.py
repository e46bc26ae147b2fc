"""The editor locks of a code-defined agent (its ``editor`` option), as Mastra defines them.

The rule itself is the runtime's (:class:`agents.runtime.overrides.EditorLocks`), which every run
applies; the editor uses the same class to decide what the admin offers and what a save may store.

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

from agents.runtime.overrides import OVERRIDE_FIELDS, EditorLocks

#: what the admin shows beside a stored override its agent's code now locks
IGNORED_LABEL = "ignored: locked by code"


__all__ = ["EditorLocks", "IGNORED_LABEL", "OVERRIDE_FIELDS"]
