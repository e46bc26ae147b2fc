""":class:`RunnableAgents`: which agents a thread runtime can run, and finding one by id.

Runs that a process starts for inputs it did not receive (the next run after a run ends, recovery
of a dead owner's thread) need the agent by id: one the runtime served already, else the site's
registry. Recovery only takes threads of agents the process can run.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Iterable

from ..errors import AgentConfigError


class RunnableAgents:
    """The agents a runtime served (kept weakly, by id) and the site's registry: ``lookup`` finds an
    agent by id, ``registry_ids`` lists the registry's ids (None: any agent id is accepted)."""

    def __init__(self, lookup: Callable[[str], Any] | None = None,
                 registry_ids: Callable[[], Iterable[str]] | None = None):
        self.lookup = lookup
        self.registry_ids = registry_ids
        self._served: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()

    def served(self, agent: Any) -> None:
        """``agent`` used this runtime: runs started here for it find it by id."""
        self._served[agent.id] = agent

    def ids(self) -> list[str] | None:
        """Agents this process can run, or None when any agent id is accepted (a lookup, no registry)."""
        if self.registry_ids is None and self.lookup is not None:
            return None
        ids = set(self._served.keys())
        if self.registry_ids is not None:
            ids.update(self.registry_ids())
        return sorted(ids)

    def get(self, agent_id: str) -> Any:
        """The agent with ``agent_id``: one this runtime served, else from ``lookup``."""
        known = self._served.get(agent_id)
        if known is not None:
            return known
        if self.lookup is None:
            raise AgentConfigError("agents", f"no agent registry to find {agent_id!r}")
        return self.lookup(agent_id)


__all__ = ["RunnableAgents"]
