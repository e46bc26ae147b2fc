"""Code agents → :class:`AgentDefinition` rows.

Run after ``migrate`` (the ``post_migrate`` signal of the agents app) and when a serving or worker
process starts (the ``editor-sync`` job of ``mastra_site.workers``). Every agent of the site's
``Mastra`` gets a row with a snapshot of its code; a row whose agent left the code is marked gone
(``present=False``) and keeps its versions; an agent that comes back is present again.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.connections import async_twin
from agents.editor.model_chain import code_chain
from agents.editor.models import AgentDefinition
from agents.runtime import Agent
from agents.runtime.mastra import Mastra
from agents.runtime.messages import system_messages
from agents.runtime.providers.base import is_model_object
from agents.runtime.providers.chain import chain_labels, is_chain

logger = logging.getLogger(__name__)


def code_defaults(agent: Agent) -> dict:
    """The code's values in the overrides' shape (``None`` for a value computed per request)."""
    instructions = None
    if not callable(agent.instructions):
        instructions = "\n".join(m["content"] for m in system_messages(agent.instructions, "instructions"))
    tools = agent.static_tools
    return {"instructions": instructions,
            "tools": sorted(tools) if tools is not None else None,
            "tool_descriptions": {name: tool.description for name, tool in sorted((tools or {}).items())},
            "model": code_chain(agent.model)}


def model_label(model: Any) -> str:
    if isinstance(model, str):
        return model
    if is_chain(model):  # a fallback chain: its models in order
        return " → ".join(chain_labels(model))[:255]
    if isinstance(model, dict):
        return json.dumps(model, sort_keys=True)[:255]
    if callable(model) and not is_model_object(model):
        return "(resolved per request)"
    return type(model).__name__


def agents_sync(*, mastra: Mastra, now: datetime | None = None) -> dict[str, list[str]]:
    """Bring the definitions in line with ``mastra``'s agents; returns the agent ids
    ``{"added": [...], "updated": [...], "gone": [...]}`` (``updated`` counts every present agent
    already known, changed or not)."""
    now = now or timezone.now()
    agents = mastra.get_agents()
    outcome: dict[str, list[str]] = {"added": [], "updated": [], "gone": []}
    with transaction.atomic():
        known = {d.agent_id: d for d in AgentDefinition.objects.select_for_update()}
        for agent_id, agent in sorted(agents.items()):
            values = {"name": agent.name, "description": agent.description, "model": model_label(agent.model),
                      "editor": agent.editor, "defaults": code_defaults(agent), "present": True,
                      "synced_at": now, "gone_at": None}
            if agent_id in known:
                AgentDefinition.objects.filter(pk=known[agent_id].pk).update(**values)
                outcome["updated"].append(agent_id)
            else:
                AgentDefinition.objects.create(agent_id=agent_id, **values)
                outcome["added"].append(agent_id)
        for agent_id, definition in sorted(known.items()):
            if agent_id not in agents and definition.present:
                AgentDefinition.objects.filter(pk=definition.pk).update(present=False, gone_at=now, synced_at=now)
                outcome["gone"].append(agent_id)
    if outcome["added"] or outcome["gone"]:
        logger.info("editor sync: added %s, gone %s", outcome["added"], outcome["gone"])
    return outcome


def sync_after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """``post_migrate`` receiver: sync the site's agents (skipped when the table is not there, as
    after migrating the agents app back before the editor's migration)."""
    from django.db import connections

    from agents.registry import get_mastra

    if using != "default" or AgentDefinition._meta.db_table not in connections[using].introspection.table_names():
        return
    agents_sync(mastra=get_mastra())


async def sync_at_start() -> None:
    """The ``editor-sync`` job of a serving or worker process."""
    from agents.registry import get_mastra

    await async_twin(agents_sync)(mastra=get_mastra())


__all__ = ["agents_sync", "code_defaults", "model_label", "sync_after_migrate", "sync_at_start"]
