"""Reading and rewriting the text of messages, for processors that work on text."""

from __future__ import annotations

from typing import Callable


def message_text_map(message: dict, change: Callable[[str], str]) -> dict:
    """A copy of ``message`` whose text (a string content, or its text parts) went through
    ``change``; other parts (images, files, tool calls and results) are kept as they are."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": change(content)}
    if isinstance(content, list):
        parts = [{**p, "text": change(p["text"])} if isinstance(p, dict) and p.get("type") == "text"
                 and isinstance(p.get("text"), str) else p for p in content]
        return {**message, "content": parts}
    return message


def message_texts(message: dict) -> list[str]:
    """The texts of ``message`` (a string content, or its text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"
                and isinstance(p.get("text"), str)]
    return []


__all__ = ["message_text_map", "message_texts"]
