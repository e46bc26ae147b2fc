"""Stored messages in the AI SDK's ``UIMessage`` form (v5), as Mastra's ``response.uiMessages``.

A UI message is ``{"id", "role", "metadata", "parts"}``: ``metadata`` holds the stored message's
``content.metadata`` with its ``createdAt`` (and ``threadId`` / ``resourceId`` on a memory thread);
the parts are what a chat UI renders, one per stored part, in order:

- ``text`` → ``{"type": "text", "text"}``;
- ``reasoning`` → ``{"type": "reasoning", "text", "state": "done"}``;
- ``tool-invocation`` → ``{"type": "tool-<toolName>", "toolCallId", "input", "state"}``, with
  ``"output"`` and state ``output-available`` once the result is in, ``input-available`` before;
- ``file`` → ``{"type": "file", "url", "mediaType", "filename"?}`` (base64 data as a ``data:`` URL);
- ``source`` → ``{"type": "source-url", "url", "sourceId", "title"}``; any other part as it is.

A part's ``providerMetadata`` is kept (``callProviderMetadata`` on a tool part). This follows
Mastra 1.71's ``AIV5Adapter.toUIMessage`` for the parts this runtime stores.
"""

from __future__ import annotations

from typing import Any

_URL_PREFIXES = ("http://", "https://", "data:")


def ui_messages(stored: list[dict]) -> list[dict]:
    """``stored`` (messages in the stored format) as UI messages, in order."""
    return [ui_message(message) for message in stored]


def ui_message(message: dict) -> dict:
    content = message.get("content") or {}
    metadata = dict(content.get("metadata") or {})
    for key in ("createdAt", "threadId", "resourceId"):
        if message.get(key):
            metadata[key] = message[key]
    if content.get("providerMetadata"):
        metadata["providerMetadata"] = content["providerMetadata"]
    parts: list[dict] = []
    texts = False
    for part in content.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool-invocation":
            parts.append(_tool_part(part))
            continue
        if kind == "reasoning":
            text = part.get("reasoning") or "".join(
                d.get("text", "") for d in part.get("details") or [] if isinstance(d, dict) and d.get("type") == "text")
            if text or part.get("details"):
                parts.append(_with_provider({"type": "reasoning", "text": text or "", "state": "done"}, part))
            continue
        if kind == "file":
            parts.append(_file_part(part))
            continue
        if kind == "source":
            source = part.get("source") or {}
            parts.append(_with_provider({"type": "source-url", "url": source.get("url"), "sourceId": source.get("id"),
                                         "title": source.get("title")}, part))
            continue
        if kind == "text":
            parts.append(_with_provider({"type": "text", "text": part.get("text", "")}, part))
        else:
            parts.append(part)
        texts = True
    if content.get("content") and not texts:  # a message stored with its text only
        parts.append({"type": "text", "text": content["content"]})
    return {"id": message.get("id"), "role": message.get("role"), "metadata": metadata, "parts": parts}


def _with_provider(out: dict, part: dict, key: str = "providerMetadata") -> dict:
    if part.get("providerMetadata"):
        out[key] = part["providerMetadata"]
    return out


def _tool_part(part: dict) -> dict:
    invocation = part.get("toolInvocation") or {}
    out: dict[str, Any] = {"type": f"tool-{invocation.get('toolName')}", "toolCallId": invocation.get("toolCallId"),
                           "input": invocation.get("args")}
    if invocation.get("state") == "result":
        out["output"] = invocation.get("result")
        out["state"] = "output-available"
    else:
        out["state"] = "input-available"
    _with_provider(out, part, "callProviderMetadata")
    if part.get("providerExecuted") is not None:
        out["providerExecuted"] = part["providerExecuted"]
    return out


def _file_part(part: dict) -> dict:
    data = part.get("data")
    media_type = part.get("mimeType") or part.get("mediaType") or "image/png"
    if isinstance(data, str) and not data.startswith(_URL_PREFIXES):
        data = f"data:{media_type};base64,{data}"
    out = {"type": "file", "url": data, "mediaType": media_type}
    if part.get("filename"):
        out["filename"] = part["filename"]
    return _with_provider(out, part)


__all__ = ["ui_message", "ui_messages"]
