"""``Mastra``: the registry of a site's agents (looked up by id by HTTP, websockets, admin, dispatcher)."""

from __future__ import annotations

from typing import Any

from .agent import Agent
from .agent.config import check_tools
from .errors import AgentConfigError, MastraError
from .overrides import OverridesProvider
from .tools import Tool


class AgentNotFound(MastraError):
    code = "agent_not_found"


class Mastra:
    """The site's agents and tools.

    ``tools``: tools registered on the site besides the agents' own (the editor's tool membership
    chooses among :meth:`get_tools`). ``overrides``: the editor's overrides provider
    (``agents.runtime.overrides``), asked at the start of every run of these agents; ``None`` runs
    the agents as the code defines them.
    """

    def __init__(self, *, agents: dict[str, Agent] | None = None, tools: dict[str, Tool] | None = None,
                 overrides: OverridesProvider | None = None):
        if overrides is not None and not callable(getattr(overrides, "agent_overrides", None)):
            raise AgentConfigError("overrides", "must have an async agent_overrides(agent, selection) method")
        self.overrides: Any = overrides
        self._tools: dict[str, Tool] = dict(check_tools(tools, "tools")) if tools is not None else {}
        self._agents: dict[str, Agent] = {}
        for key, agent in (agents or {}).items():
            self.register(agent, key=key)

    def register(self, agent: Agent, *, key: str | None = None) -> Agent:
        if not isinstance(agent, Agent):
            raise AgentConfigError("agents", "must be Agent instances")
        for name in {key or agent.id, agent.id}:
            other = self._agents.get(name)
            if other is not None and other is not agent:
                raise AgentConfigError("agents", f"two agents share the id {name!r}")
            self._agents[name] = agent
        agent.mastra = self
        return agent

    def get_agent(self, agent_id: str) -> Agent:
        try:
            return self._agents[agent_id]
        except KeyError:
            raise AgentNotFound(f"no agent with id {agent_id!r}") from None

    def get_agents(self) -> dict[str, Agent]:
        """Agents by id (each once)."""
        return {agent.id: agent for agent in self._agents.values()}

    def get_tools(self) -> dict[str, Tool]:
        """The tools registered on the site: the ``tools`` given here, then every agent's tools given
        in code as a dict (by the name the agent gives them; the first agent wins a shared name)."""
        found = dict(self._tools)
        for agent in self.get_agents().values():
            for name, tool in (agent.static_tools or {}).items():
                found.setdefault(name, tool)
        return found
