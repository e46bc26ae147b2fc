"""Agents as Mastra's server lists them (``GET /api/agents``, ``GET /api/agents/<id>``)."""

from __future__ import annotations

import json
from typing import Any

from agents.runtime.providers.base import is_model_object
from agents.runtime.providers.chain import entry_fields, is_chain


def schema_text(schema: Any) -> str | None:
    """A tool schema as Mastra encodes it: a JSON string of ``{"json": <JSON Schema>}``."""
    if schema is None:
        return None
    return json.dumps({"json": schema.json_schema}, separators=(",", ":"))


def model_fields(model: Any) -> dict:
    """``provider`` and ``modelId`` of an agent's model (of a chain: its first enabled entry, and the
    chain as Mastra's ``modelList``: ``[{id, enabled, maxRetries, model: {modelId, provider,
    modelVersion}}]``)."""
    if is_chain(model):
        entries = [entry_fields(item, f"model[{i}]") for i, item in enumerate(model)]
        listed = []
        for entry in entries:
            fields = model_fields(entry["model"])
            listed.append({"id": entry.get("id") or f"{fields['provider']}/{fields['modelId']}",
                           "enabled": entry.get("enabled", True) is not False,
                           "maxRetries": entry.get("max_retries") or 0,
                           "model": {**fields, "modelVersion": "v2"}})
        first = next((item["model"] for item in listed if item["enabled"]), listed[0]["model"])
        return {"provider": first["provider"], "modelId": first["modelId"], "modelList": listed}
    if isinstance(model, str):
        provider, _, model_id = model.partition("/")
        return {"provider": provider, "modelId": model_id or provider}
    if isinstance(model, dict):
        return model_fields(str(model.get("id", "")))
    if is_model_object(model):
        return {"provider": getattr(model, "provider", "custom"), "modelId": getattr(model, "model_id", "custom")}
    return {"provider": "dynamic", "modelId": "dynamic"}


async def agents_with_draft(agents: list[Any]) -> set[str]:
    """The ids of ``agents`` whose editor draft differs from the published version (the site's
    overrides provider knows; none without an editor)."""
    found: set[str] = set()
    by_provider: dict[int, tuple[Any, list]] = {}
    for agent in agents:
        provider = getattr(agent.mastra, "overrides", None)
        if callable(getattr(provider, "agents_with_draft", None)):
            by_provider.setdefault(id(provider), (provider, []))[1].append(agent)
    for provider, members in by_provider.values():
        found |= await provider.agents_with_draft(members)
    return found


async def agent_json(agent: Any, *, with_id: bool, has_draft: bool = False) -> dict:
    """``{id?, name, description, instructions, tools, agents, provider, modelId, ...}``: the keys
    Mastra's server sends (``id`` and ``hasDraft`` only in the list, as there). Instructions and
    tools are the agent's effective definition (``Agent.get_definition``: the code under the
    editor's published version), and so is the model (the published fallback chain, else the code's)."""
    definition = await agent.get_definition()
    instructions = "\n".join(str(m.get("content", "")) for m in definition.instructions)
    tools = {}
    for name, tool in definition.tools.items():
        tools[name] = {"id": tool.id, "description": definition.tool_descriptions.get(name, tool.description or ""),
                       "inputSchema": schema_text(tool.input_schema), "outputSchema": schema_text(tool.output_schema),
                       "requireApproval": tool.require_approval}
    data = {"name": agent.name, "description": agent.description, "instructions": instructions, "tools": tools,
            "agents": {}, "workflows": {}, "skills": [], "workspaceTools": [], "browserTools": [], "hasBrowser": False,
            "inputProcessors": [], "outputProcessors": [], **model_fields(list(definition.model) if definition.model else agent.get_model()), "modelVersion": "v2",
            "supportsMemory": agent.memory is not None,
            "defaultOptions": agent.default_options if isinstance(agent.default_options, dict) else {},
            "defaultGenerateOptionsLegacy": {}, "defaultStreamOptionsLegacy": {}, "source": "code"}
    return {"id": agent.id, **data, "hasDraft": has_draft} if with_id else data
