"""The checks of an agent's configuration shared by its constructor and its calls."""

from __future__ import annotations

from typing import Any

from ..errors import AgentConfigError
from ..providers.router import parse_model_id
from ..tools import Tool

EDITOR_KEYS = ("instructions", "tools", "model")
#: the keywords ``Agent()`` takes (Mastra's constructor options, snake_case)
AGENT_OPTIONS = ("id", "name", "instructions", "model", "description", "metadata", "tools", "hooks", "agents",
                 "default_options", "memory", "input_processors", "output_processors", "max_processor_retries",
                 "request_context_schema", "notifications", "editor", "caller_models", "channels")

# -- the rest of Mastra's Agent surface (scorers, mastra) --
AGENT_OPTIONS = AGENT_OPTIONS + ("scorers", "mastra", "transform", "workflows", "voice")


def validate_editor(editor: Any) -> Any:
    """``editor``: None, False or ``{'instructions': bool, 'tools': bool | {'description': bool},
    'model': bool}`` (``model`` is this site's addition: Mastra's editor never changes the model)."""
    if editor is None or editor is False:
        return editor
    if not isinstance(editor, dict):
        raise AgentConfigError("editor", "must be False or {'instructions': bool, 'tools': bool | {'description': bool}}")
    for key, value in editor.items():
        if key not in EDITOR_KEYS:
            raise AgentConfigError(f"editor.{key}", "unknown key (expected 'instructions', 'tools' or 'model')")
        if key in ("instructions", "model") and not isinstance(value, bool):
            raise AgentConfigError(f"editor.{key}", "must be a bool")
        if key == "tools" and not isinstance(value, bool):
            if not isinstance(value, dict) or set(value) - {"description"} or not isinstance(value.get("description", False), bool):
                raise AgentConfigError("editor.tools", "must be a bool or {'description': bool}")
    return editor


def check_caller_models(value: Any) -> tuple[str, ...]:
    """``caller_models``: the model ids (``"provider/model"`` strings) a caller over HTTP or the chat
    websocket may pick for a run of this agent; None or empty: none. Returned as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise AgentConfigError("caller_models", "must be a list of model ids ('provider/model' strings)")
    for index, model_id in enumerate(value):
        parse_model_id(model_id, field=f"caller_models[{index}]")
    return tuple(value)


def check_tools(tools: Any, field: str) -> dict[str, Tool]:
    """``tools`` when it is a dict of named :class:`Tool`; raises :class:`AgentConfigError` naming ``field``."""
    if not isinstance(tools, dict):
        raise AgentConfigError(field, "must be a dict of {name: tool}")
    for name, tool in tools.items():
        if not isinstance(name, str) or not name:
            raise AgentConfigError(field, "tool names must be non-empty strings")
        if not isinstance(tool, Tool):
            raise AgentConfigError(f"{field}.{name}", "must be a tool made with create_tool()")
    return tools


__all__ = ["AGENT_OPTIONS", "EDITOR_KEYS", "check_caller_models", "check_tools", "validate_editor"]
