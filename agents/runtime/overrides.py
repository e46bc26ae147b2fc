"""Editor overrides: what operators changed in an agent defined in code, applied at the start of a run.

The runtime knows nothing of where overrides are stored. A site that has an editor gives its
:class:`~agents.runtime.mastra.Mastra` an *overrides provider* (``Mastra(overrides=...)``): any object
with ``async agent_overrides(agent, selection) -> AgentOverrides | None``. At the start of every run
(sub-agent runs included) the run asks the provider of its agent's ``Mastra`` once, with:

- ``agent``: the code-defined :class:`~agents.runtime.Agent` (its ``id`` and ``editor`` locks);
- ``selection``: the call's choice for this agent from ``versions={"agents": {id: ...}}``:
  ``None`` (the published version), ``{"status": "published"}``, ``{"status": "draft"}`` (the latest
  version) or ``{"version_id": "..."}``.

The provider returns the overrides to apply (already stripped of the fields the agent's ``editor``
option locks) or ``None`` for "the code's definition". It raises
:class:`~agents.runtime.errors.AgentConfigError` for a selection that names no version of the agent.

``versions`` travels with the run: a sub-agent called through ``Agent(agents={...})`` receives the
caller's ``versions`` (``ToolContext.versions``), so one call selects the versions of a whole tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import AgentConfigError
from .naming import snake_keys
from .tools import Tool

VERSION_STATUSES = ("draft", "published")


@dataclass(frozen=True)
class AgentOverrides:
    """What a run uses instead of the code's definition (``None``: the code's value).

    ``instructions`` replace the agent's instructions; ``tools`` is the tool membership (names of the
    agent's own tools or of the site's tools, see :meth:`Mastra.get_tools`); ``tool_descriptions``
    replace what the model reads of a tool; ``version_id`` names the stored version they come from.
    """

    instructions: Any = None
    tools: tuple[str, ...] | None = None
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    version_id: str | None = None

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
    """The overrides of ``agent``'s run: its ``Mastra``'s provider's answer for the selection of
    ``versions``, else the overrides set in code with ``Agent.apply_editor_overrides``."""
    selection = ((versions or {}).get("agents") or {}).get(agent.id)
    provider = getattr(agent.mastra, "overrides", None)
    if provider is not None:
        found = await provider.agent_overrides(agent, selection)
        if found is not None:
            return found
    elif selection is not None:
        raise AgentConfigError(f"options.versions.agents.{agent.id}",
                               "this agent's Mastra has no editor: there are no versions to select")
    local = agent.editor_overrides
    if not local:
        return NO_OVERRIDES
    return AgentOverrides(instructions=local.get("instructions"),
                          tools=tuple(local["tools"]) if "tools" in local else None,
                          tool_descriptions=dict(local.get("tool_descriptions") or {}))


__all__ = ["AgentOverrides", "NO_OVERRIDES", "OverridesProvider", "VERSION_STATUSES", "overrides_resolve",
           "validate_versions"]
