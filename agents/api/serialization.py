"""Agents as Mastra's server lists them (``GET /api/agents``, ``GET /api/agents/<id>``)."""

from __future__ import annotations

import json
from typing import Any

from agents.runtime.providers.base import is_model_object


def schema_text(schema: Any) -> str | None:
    """A tool schema as Mastra encodes it: a JSON string of ``{"json": <JSON Schema>}``."""
    if schema is None:
        return None
    return json.dumps({"json": schema.json_schema}, separators=(",", ":"))


def model_fields(model: Any) -> dict:
    if isinstance(model, str):
        provider, _, model_id = model.partition("/")
        return {"provider": provider, "modelId": model_id or provider}
    if isinstance(model, dict):
        return model_fields(str(model.get("id", "")))
    if is_model_object(model):
        return {"provider": getattr(model, "provider", "custom"), "modelId": getattr(model, "model_id", "custom")}
    return {"provider": "dynamic", "modelId": "dynamic"}


async def agent_json(agent: Any, *, with_id: bool) -> dict:
    """``{id?, name, description, instructions, tools, agents, provider, modelId, ...}``: the keys
    Mastra's server sends (``id`` only in the list, as there)."""
    instructions = "\n".join(str(m.get("content", "")) for m in await agent.get_instructions())
    descriptions = agent.editor_overrides.get("tool_descriptions") or {}
    tools = {}
    for name, tool in (await agent.get_tools()).items():
        tools[name] = {"id": tool.id, "description": descriptions.get(name, tool.description or ""),
                       "inputSchema": schema_text(tool.input_schema), "outputSchema": schema_text(tool.output_schema),
                       "requireApproval": tool.require_approval}
    data = {"name": agent.name, "description": agent.description, "instructions": instructions, "tools": tools,
            "agents": {}, "workflows": {}, "skills": [], "workspaceTools": [], "browserTools": [], "hasBrowser": False,
            "inputProcessors": [], "outputProcessors": [], **model_fields(agent.get_model()), "modelVersion": "v2",
            "supportsMemory": agent.memory is not None,
            "defaultOptions": agent.default_options if isinstance(agent.default_options, dict) else {},
            "defaultGenerateOptionsLegacy": {}, "defaultStreamOptionsLegacy": {}, "source": "code"}
    return {"id": agent.id, **data, "hasDraft": False} if with_id else data
