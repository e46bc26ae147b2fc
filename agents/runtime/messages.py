"""The runtime's message format and the normalisation of what callers pass in.

A *model message* is a dict ``{"role", "content"}`` as the AI SDK's ModelMessage, with Mastra's
chunk names for tool parts:

- ``{"role": "system", "content": "...", "providerOptions"?: {...}}``
- ``{"role": "user", "content": "..." | [parts]}``, parts ``{"type": "text", "text"}``,
  ``{"type": "image", "image", "mimeType"?}``, ``{"type": "file", "data", "mimeType", "filename"?}``
- ``{"role": "assistant", "content": [{"type": "text", "text"}, {"type": "reasoning", "text"},
  {"type": "tool-call", "toolCallId", "toolName", "args"}]}``
- ``{"role": "tool", "content": [{"type": "tool-result", "toolCallId", "toolName", "result", "isError"?}]}``

A *stored message* adds ``id``, ``createdAt`` and, on memory threads, ``threadId``/``resourceId``.
"""

from __future__ import annotations

from typing import Any

from .errors import AgentConfigError
from .random_ids import uuid4_hex, uuid4_str
from .timestamps import now_iso  # noqa: F401 - the runtime takes it from here, beside new_id

ROLES = ("system", "user", "assistant", "tool")
USER_PART_TYPES = ("text", "image", "file")


def new_id(prefix: str = "") -> str:
    return f"{prefix}{uuid4_hex()}" if prefix else uuid4_str()


def _normalize_part(part: Any, where: str) -> dict:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, dict) or "type" not in part:
        raise AgentConfigError(where, "each content part must be a string or a dict with a 'type'")
    kind = part["type"]
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise AgentConfigError(where, "a text part needs a string 'text'")
        return part
    if kind in ("image", "file"):
        data = part.get("image", part.get("data", part.get("url")))
        if data is None:
            raise AgentConfigError(where, f"an {kind} part needs 'image', 'data' or 'url'")
        out = dict(part)
        if "mime_type" in out:
            out["mimeType"] = out.pop("mime_type")
        if "media_type" in out:
            out["mimeType"] = out.pop("media_type")
        return out
    if kind in ("tool-call", "tool-result", "reasoning"):
        return part
    raise AgentConfigError(where, f"unknown content part type {kind!r}")


def normalize_message(message: Any, where: str = "messages") -> dict:
    """One caller message (str or dict) as a model message."""
    if isinstance(message, str):
        return {"role": "user", "content": message}
    if not isinstance(message, dict):
        raise AgentConfigError(where, f"a message must be a string or a dict, not {type(message).__name__}")
    role = message.get("role", "user")
    if role not in ROLES:
        raise AgentConfigError(where, f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
    content = message.get("content", message.get("parts"))
    if content is None:
        raise AgentConfigError(where, "a message needs 'content'")
    if isinstance(content, list):
        content = [_normalize_part(p, where) for p in content]
    elif not isinstance(content, str):
        raise AgentConfigError(where, "content must be a string or a list of parts")
    out = {"role": role, "content": content}
    for key in ("id", "createdAt", "metadata", "type", "signal"):
        if key in message:
            out[key] = message[key]
    po = message.get("providerOptions", message.get("provider_options"))
    if po:
        out["providerOptions"] = po
    return out


def normalize_messages(messages: Any, where: str = "messages") -> list[dict]:
    """``str | [str] | dict | [dict]`` (also parts lists) → a list of model messages."""
    if isinstance(messages, (str, dict)):
        return [normalize_message(messages, where)]
    if isinstance(messages, (list, tuple)):
        if messages and all(isinstance(m, dict) and "role" not in m and "type" in m for m in messages):
            # a bare list of content parts is one user message
            return [normalize_message({"role": "user", "content": list(messages)}, where)]
        return [normalize_message(m, where) for m in messages]
    raise AgentConfigError(where, f"expected a string, a message dict or a list of them, not {type(messages).__name__}")


def text_of(message: dict) -> str:
    """The text parts of a message, joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def system_messages(value: Any, where: str) -> list[dict]:
    """Instructions / system option in any accepted form → system messages."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "system", "content": value}] if value else []
    if isinstance(value, dict):
        content = value.get("content")
        if value.get("role", "system") != "system":
            raise AgentConfigError(where, "a system message dict must have role 'system'")
        if not isinstance(content, str):
            raise AgentConfigError(where, "a system message needs string 'content'")
        msg = {"role": "system", "content": content}
        po = value.get("provider_options", value.get("providerOptions"))
        if po is not None:
            if not isinstance(po, dict):
                raise AgentConfigError(where, "provider_options must be a dict")
            msg["providerOptions"] = po
        return [msg]
    if isinstance(value, (list, tuple)):
        out: list[dict] = []
        for item in value:
            if not isinstance(item, (str, dict)):
                raise AgentConfigError(where, f"list items must be strings or system message dicts, not {type(item).__name__}")
            out.extend(system_messages(item, where))
        return out
    raise AgentConfigError(where, f"expected a string, a list of strings, a system message dict or a list of those, not {type(value).__name__}")
