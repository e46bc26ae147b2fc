"""``Mastra``: the registry of a site's agents (looked up by id by HTTP, websockets, admin, dispatcher)."""

from __future__ import annotations

from .agent import Agent
from .errors import AgentConfigError, MastraError


class AgentNotFound(MastraError):
    code = "agent_not_found"


class Mastra:
    def __init__(self, *, agents: dict[str, Agent] | None = None):
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
