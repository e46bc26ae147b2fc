"""``Mastra``: the registry of a site's agents (looked up by id by HTTP, websockets, admin, dispatcher)."""

from __future__ import annotations

from typing import Any

from .agent import Agent
from .agent.config import check_tools
from .budgets import Budget, budgets_check
from .errors import AgentConfigError, MastraError
from .overrides import OverridesProvider
from .schedules import HOOKS as SCHEDULE_HOOKS
from .schedules import Schedules
from .tools import Tool
from .workflows import Workflow, workflows_check


class AgentNotFound(MastraError):
    code = "agent_not_found"


class WorkflowNotFound(MastraError):
    code = "workflow_not_found"


class Mastra:
    """The site's agents and tools.

    ``tools``: tools registered on the site besides the agents' own (the editor's tool membership
    chooses among :meth:`get_tools`). ``overrides``: the editor's overrides provider
    (``agents.runtime.overrides``), asked at the start of every run of these agents; ``None`` runs
    the agents as the code defines them. ``workflows``: workflows schedules may run
    (``mastra.schedules.create(workflow_id=...)``). ``schedules``: the schedule hooks
    (``{"prepare", "on_finish", "on_error", "on_abort"}``, ``agents.runtime.schedules.execute``);
    ``mastra.schedules`` is the schedules API (docs/schedules.md). ``policy``: the run policy
    (``agents.runtime.run_policy``) every run of these agents asks before each model call and tells
    what each step used; ``budgets``: the site's budgets in code (:class:`~agents.runtime.budgets.Budget`
    or dicts of its fields), which the policy enforces beside its own (docs/operations.md).
    """

    def __init__(self, *, agents: dict[str, Agent] | None = None, tools: dict[str, Tool] | None = None,
                 overrides: OverridesProvider | None = None, workflows: dict[str, Workflow] | None = None,
                 schedules: dict | None = None, policy: Any = None, budgets: list | None = None):
        if overrides is not None and not callable(getattr(overrides, "agent_overrides", None)):
            raise AgentConfigError("overrides", "must have an async agent_overrides(agent, selection) method")
        self.overrides: Any = overrides
        for method in ("before_model_call", "after_step", "run_end", "admit"):
            if policy is not None and not callable(getattr(policy, method, None)):
                raise AgentConfigError("policy", f"must have an async {method} method (a RunPolicy)")
        self.budgets: tuple[Budget, ...] = budgets_check(budgets)
        if self.budgets and policy is None:
            raise AgentConfigError("budgets", "need a policy that enforces them (policy=...)")
        self.policy: Any = policy
        self._tools: dict[str, Tool] = dict(check_tools(tools, "tools")) if tools is not None else {}
        self._workflows: dict[str, Workflow] = workflows_check(workflows, "workflows") if workflows else {}
        self.schedule_hooks: dict = _schedule_hooks(schedules)
        self.schedules = Schedules(self)
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

    def get_workflow(self, workflow_id: str) -> Workflow:
        try:
            return self._workflows[workflow_id]
        except KeyError:
            raise WorkflowNotFound(f"no workflow with id {workflow_id!r}") from None

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


def _schedule_hooks(value: dict | None) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AgentConfigError("schedules", "must be a dict of hooks (prepare, on_finish, on_error, on_abort)")
    for name, hook in value.items():
        if name not in SCHEDULE_HOOKS:
            raise AgentConfigError("schedules", f"unknown hook {name!r}; the hooks are {', '.join(SCHEDULE_HOOKS)}")
        if not callable(hook):
            raise AgentConfigError(f"schedules.{name}", "must be callable")
    return dict(value)
