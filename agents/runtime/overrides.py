"""Editor overrides: what operators changed in an agent defined in code, applied at the start of a run.

The runtime knows nothing of where overrides are stored. A site that has an editor gives its
:class:`~agents.runtime.mastra.Mastra` an *overrides provider* (``Mastra(overrides=...)``): any object
with ``async agent_overrides(agent, selection) -> AgentOverrides | None``. At the start of every run
(sub-agent runs included) the run asks the provider of its agent's ``Mastra`` once, with:

- ``agent``: the code-defined :class:`~agents.runtime.Agent` (its ``id`` and ``editor`` locks);
- ``selection``: the call's choice for this agent from ``versions={"agents": {id: ...}}``:
  ``None`` (the published version), ``{"status": "published"}``, ``{"status": "draft"}`` (the latest
  version) or ``{"version_id": "..."}``.

The provider returns the overrides to apply or ``None`` for "the code's definition". It raises
:class:`~agents.runtime.errors.AgentConfigError` for a selection that names no version of the agent.

The agent's ``editor`` option (its locks, :class:`EditorLocks`) is applied here, once, to whatever
the provider answers or ``Agent.apply_editor_overrides`` set: a field the code locks is dropped.
:func:`effective_definition` (``Agent.get_definition``) is the one call that reads what an agent
runs with (instructions, tools, tool descriptions, the model's fallback chain); runs and the HTTP
API both use it. A call's own ``model`` (or ``default_options``' model) is chosen over the
editor's chain; the editor's chain over the agent's ``model``.

``versions`` travels with the run: a sub-agent called through ``Agent(agents={...})`` receives the
caller's ``versions`` (``ToolContext.versions``), so one call selects the versions of a whole tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from .errors import AgentConfigError
from .messages import system_messages
from .naming import snake_keys
from .tools import Tool

VERSION_STATUSES = ("draft", "published")
#: the fields an override may hold, in display order
OVERRIDE_FIELDS = ("instructions", "tools", "tool_descriptions", "model")


@dataclass(frozen=True)
class EditorLocks:
    """Which override fields an agent's ``editor`` option lets the editor change (True: editable),
    as Mastra defines them:

    - ``editor`` omitted (``None``): instructions and tools (membership and descriptions);
    - ``editor=False``: nothing;
    - ``{"instructions": True}``: only the instructions;
    - ``{"tools": True}``: the tool membership and the tool descriptions;
    - ``{"tools": {"description": True}}``: only the tool descriptions;
    - keys combine; a key left out is locked;
    - ``{"model": True}`` (this site's addition; Mastra's model always comes from code): the model,
      as a fallback chain of ``{"model": "provider/model", "max_retries": n, "enabled": bool}``
      entries. Only an explicit ``model: True`` allows it (``editor`` omitted leaves it locked).
    """

    instructions: bool
    tools: bool
    tool_descriptions: bool
    model: bool = False

    @classmethod
    def of(cls, editor: Any) -> "EditorLocks":
        """The locks of an ``editor`` option (already validated by ``Agent()``)."""
        if editor is None:
            return cls(True, True, True)
        if editor is False:
            return cls(False, False, False)
        tools = editor.get("tools", False)
        model = bool(editor.get("model", False))
        if isinstance(tools, dict):
            return cls(bool(editor.get("instructions", False)), False, bool(tools.get("description", False)), model)
        return cls(bool(editor.get("instructions", False)), bool(tools), bool(tools), model)

    def editable(self, field: str) -> bool:
        return bool(getattr(self, field))

    @property
    def editable_fields(self) -> tuple[str, ...]:
        return tuple(f for f in OVERRIDE_FIELDS if self.editable(f))

    @property
    def read_only(self) -> bool:
        return not self.editable_fields

    def strip(self, overrides: dict) -> tuple[dict, list[str]]:
        """``(kept, ignored)``: the overrides (a dict of :data:`OVERRIDE_FIELDS`) these locks allow,
        and the names of the fields present that the code locks (in :data:`OVERRIDE_FIELDS` order)."""
        kept = {f: overrides[f] for f in OVERRIDE_FIELDS if f in overrides and self.editable(f)}
        ignored = [f for f in OVERRIDE_FIELDS if f in overrides and not self.editable(f)]
        return kept, ignored

    def restrict(self, overrides: "AgentOverrides") -> "AgentOverrides":
        """``overrides`` without the fields these locks do not allow."""
        return replace(overrides,
                       instructions=overrides.instructions if self.instructions else None,
                       tools=overrides.tools if self.tools else None,
                       tool_descriptions=dict(overrides.tool_descriptions) if self.tool_descriptions else {},
                       model=overrides.model if self.model else None)

    def describe(self) -> str:
        """A short human summary (``"instructions, tool descriptions"`` / ``"read-only"``)."""
        if self.read_only:
            return "read-only"
        names = {"instructions": "instructions", "tools": "tool membership", "tool_descriptions": "tool descriptions",
                 "model": "model"}
        return ", ".join(names[f] for f in self.editable_fields)


@dataclass(frozen=True)
class AgentOverrides:
    """What a run uses instead of the code's definition (``None``: the code's value).

    ``instructions`` replace the agent's instructions; ``tools`` is the tool membership (names of the
    agent's own tools or of the site's tools, see :meth:`Mastra.get_tools`); ``tool_descriptions``
    replace what the model reads of a tool; ``model`` is the run's model as a fallback chain (a
    tuple of chain entries, ``agents.runtime.providers.chain``) instead of the code's;
    ``version_id`` names the stored version they come from.
    """

    instructions: Any = None
    tools: tuple[str, ...] | None = None
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    version_id: str | None = None
    model: tuple[dict, ...] | None = None

    def apply_tools(self, tools: dict[str, Tool], site_tools: dict[str, Tool]) -> dict[str, Tool]:
        """The run's tools: with a membership, the named tools (the agent's first, then the site's;
        an unknown name is dropped, the tool may have left the code) plus the sub-agent tools."""
        if self.tools is None:
            return tools
        chosen = {name: tool for name, tool in tools.items() if name.startswith("agent-")}
        for name in self.tools:
            tool = tools.get(name) or site_tools.get(name)
            if tool is not None:
                chosen[name] = tool
        return chosen


NO_OVERRIDES = AgentOverrides()


class OverridesProvider(Protocol):
    """``agent_overrides`` is required. A provider that keeps drafts may also have
    ``async agents_with_draft(agents) -> set[str]``: the ids of those agents whose draft differs
    from the published version (the HTTP API's ``hasDraft``)."""

    async def agent_overrides(self, agent: Any, selection: dict | None) -> AgentOverrides | None: ...


def validate_versions(value: Any) -> dict:
    """``versions={"agents": {agent id: {"version_id": str} | {"status": "draft" | "published"}}}``
    (camelCase keys accepted) → the same in snake_case; raises :class:`AgentConfigError`."""
    if not isinstance(value, dict):
        raise AgentConfigError("options.versions", "must be {'agents': {agent id: selection}}")
    value = snake_keys(value)
    if set(value) - {"agents"}:
        raise AgentConfigError(f"options.versions.{sorted(set(value) - {'agents'})[0]}", "unknown key")
    agents = value.get("agents") or {}
    if not isinstance(agents, dict):
        raise AgentConfigError("options.versions.agents", "must be a dict of {agent id: selection}")
    out = {}
    for agent_id, selection in agents.items():
        where = f"options.versions.agents.{agent_id}"
        if not isinstance(selection, dict):
            raise AgentConfigError(where, "must be {'version_id': ...} or {'status': 'draft' | 'published'}")
        selection = snake_keys(selection)
        if set(selection) == {"version_id"}:
            version_id = selection["version_id"]
            if isinstance(version_id, int) and not isinstance(version_id, bool):
                version_id = str(version_id)
            if not isinstance(version_id, str) or not version_id:
                raise AgentConfigError(f"{where}.version_id", "must be a version id")
            out[agent_id] = {"version_id": version_id}
        elif set(selection) == {"status"}:
            if selection["status"] not in VERSION_STATUSES:
                raise AgentConfigError(f"{where}.status", "must be 'draft' or 'published'")
            out[agent_id] = {"status": selection["status"]}
        else:
            raise AgentConfigError(where, "must be {'version_id': ...} or {'status': 'draft' | 'published'}")
    return {"agents": out}


async def overrides_resolve(agent: Any, versions: dict | None) -> AgentOverrides:
    """The overrides of ``agent``'s run, within its editor locks: its ``Mastra``'s provider's answer
    for the selection of ``versions``, else the overrides set in code with
    ``Agent.apply_editor_overrides``."""
    selection = ((versions or {}).get("agents") or {}).get(agent.id)
    provider = getattr(agent.mastra, "overrides", None)
    found = None
    if provider is not None:
        found = await provider.agent_overrides(agent, selection)
    elif selection is not None:
        raise AgentConfigError(f"options.versions.agents.{agent.id}",
                               "this agent's Mastra has no editor: there are no versions to select")
    if found is None:
        local = agent.editor_overrides
        if not local:
            return NO_OVERRIDES
        found = AgentOverrides(instructions=local.get("instructions"),
                               tools=tuple(local["tools"]) if "tools" in local else None,
                               tool_descriptions=dict(local.get("tool_descriptions") or {}),
                               model=tuple(local["model"]) if local.get("model") else None)
    return EditorLocks.of(agent.editor).restrict(found)


@dataclass(frozen=True)
class EffectiveDefinition:
    """What an agent runs with: the code's definition under its editor overrides (within its locks).

    ``instructions``: the system messages; ``tools``: ``{name: Tool}`` (membership applied, sub-agent
    and workflow tools included); ``tool_descriptions``: what the model reads of each of those tools;
    ``version_id``: the stored version the overrides come from (``None``: the code's definition or
    overrides set in code); ``model``: the editor's fallback chain (``None``: the code's model).
    """

    instructions: list[dict]
    tools: dict[str, Tool]
    tool_descriptions: dict[str, str]
    version_id: str | None = None
    model: tuple[dict, ...] | None = None


async def effective_definition(agent: Any, *, request_context: dict | None = None,
                               versions: dict | None = None) -> EffectiveDefinition:
    """``agent``'s effective definition for a call (``versions``: the call's selection, default the
    published version); dynamic instructions and tools are resolved with ``request_context``."""
    overrides = await overrides_resolve(agent, versions)
    if overrides.instructions is not None:
        instructions = system_messages(overrides.instructions, "instructions")
    else:
        instructions = await agent.get_instructions(request_context)
    site_tools = agent.mastra.get_tools() if agent.mastra is not None else {}
    tools = overrides.apply_tools(await agent.get_tools(request_context), site_tools)
    descriptions = {name: overrides.tool_descriptions.get(name, tool.description or "")
                    for name, tool in tools.items()}
    return EffectiveDefinition(instructions=instructions, tools=tools, tool_descriptions=descriptions,
                               version_id=overrides.version_id, model=overrides.model)


__all__ = ["AgentOverrides", "EditorLocks", "EffectiveDefinition", "NO_OVERRIDES", "OVERRIDE_FIELDS",
           "OverridesProvider", "VERSION_STATUSES", "effective_definition", "overrides_resolve", "validate_versions"]
