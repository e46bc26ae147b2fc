"""``local/echo``: an offline, deterministic model.

It streams back a readable account of the prompt it received: one line per input it has not
answered yet (user messages and signal XML verbatim, tool results as JSON). It calls tools on request:
a user input line of the form ``/tool <name> <json args>`` makes it call ``<name>``; several such
lines are called one per step, in order, and once every requested call has a result it answers in
text. With a JSON response format it answers with a JSON value shaped by the schema.

Config dict options: ``{"id": "local/echo", "delay_ms": 0, "chunk_size": 0}`` — ``delay_ms`` sleeps
before each delta (for tests of live runs), ``chunk_size`` splits lines into deltas of that many
characters (0: one delta per line).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from typing import Any, AsyncIterator

from .base import ModelRequest, usage

_TOOL_LINE = re.compile(r"^\s*/tool\s+([A-Za-z0-9_.:-]+)\s*(.*)$")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    pieces = []
    for part in content or []:
        kind = part.get("type")
        if kind == "text":
            pieces.append(part["text"])
        elif kind in ("image", "file"):
            pieces.append(f"[{kind} {part.get('mimeType', 'unknown')}]")
    return "\n".join(pieces)


@functools.lru_cache(maxsize=1024)
def _requested_calls(text: str) -> tuple[tuple[str, str], ...]:
    """The ``(tool name, raw JSON args)`` of the ``/tool`` lines of a user input, in order. Cached: a
    run's user message is read again at each of its steps."""
    if "/tool" not in text:
        return ()
    calls = []
    for line in text.splitlines():
        match = _TOOL_LINE.match(line)
        if match:
            calls.append((match.group(1), match.group(2).strip() or "{}"))
    return tuple(calls)


def _call_count(message: dict) -> int:
    """How many tool calls an assistant message makes."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if p.get("type") == "tool-call")


@functools.lru_cache(maxsize=1024)
def _word_count(text: str) -> int:
    return len(text.split())


def example_for(schema: dict) -> Any:
    """A small value that satisfies common JSON Schemas (used for structured output offline)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema and schema[key]:
            return example_for(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: example_for(sub) for name, sub in props.items()}
    if kind == "array":
        return [example_for(schema["items"])] * schema.get("minItems", 0) if "items" in schema else []
    if kind == "string":
        return "echo"
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


class EchoModel:
    provider = "local"
    #: asked for a thread's title it would echo the request: titles are made from the first message
    writes_titles = False

    def __init__(self, model_id: str = "echo", *, delay_ms: float = 0, chunk_size: int = 0):
        self.model_id = model_id
        self.delay = delay_ms / 1000.0
        self.chunk_size = chunk_size

    def _plan(self, request: ModelRequest) -> tuple[list[tuple[str, str]], int]:
        """Tool calls still to make in this turn, and where the inputs not answered yet start.

        A turn starts after the last final answer (an assistant message without tool calls).
        """
        messages = request.messages
        last_final = last_assistant = -1
        made = 0  # tool calls made since the last final answer
        for i, m in enumerate(messages):
            if m["role"] == "assistant":
                last_assistant = i
                calls = _call_count(m)
                if calls:
                    made += calls
                else:
                    last_final, made = i, 0
        if request.tool_choice == "none":
            return [], last_assistant + 1
        requested: list[tuple[str, str]] = []
        for m in messages[last_final + 1:]:
            if m["role"] == "user":
                requested.extend(_requested_calls(_content_text(m["content"])))
        return requested[made:], last_assistant + 1

    @staticmethod
    def _lines(messages: list[dict]) -> list[str]:
        """The lines of the reply: the inputs in ``messages`` (the ones not answered yet)."""
        lines: list[str] = []
        for m in messages:
            if m["role"] == "user":
                lines.extend(_content_text(m["content"]).splitlines() or [""])
            elif m["role"] == "tool":
                for p in m["content"]:
                    verb = "failed" if p.get("isError") else "returned"
                    lines.append(f"tool {p['toolName']} {verb} {json.dumps(p.get('result'), sort_keys=True, default=str)}")
        return lines

    def stream(self, request: ModelRequest) -> AsyncIterator[dict]:
        """The step's events; with ``delay_ms``, each tool call and text delta comes that late.
        They are made at once; without a delay they are handed out from the list as they are (an
        async generator costs asyncio's bookkeeping of every generator started)."""
        events = self._events(request)
        return _paced(events, self.delay) if self.delay else _Replay(events)

    def _events(self, request: ModelRequest) -> list[dict]:
        """The step's events, in order (what :meth:`stream` hands out)."""
        pending, unanswered = self._plan(request)
        prompt_words = sum(_word_count(_content_text(m["content"])) for m in request.messages)
        events = [{"type": "response-metadata", "id": "echo-response", "model_id": self.model_id,
                   "timestamp": None, "headers": {}}]
        if pending:
            name, raw = pending[0]
            events.append({"type": "tool-call", "tool_call_id": f"echo_call_{len(request.messages)}",
                           "tool_name": name, "args_text": raw})
            events.append({"type": "finish", "finish_reason": "tool-calls", "usage": usage(prompt_words, 1)})
            return events
        if request.response_format and request.response_format.get("type") == "json":
            text = json.dumps(example_for(request.response_format.get("schema") or {}))
            deltas = [text]
        else:
            body = self._lines(request.messages[unanswered:]) or ["(nothing new)"]
            text_lines = ["echo: " + line if line else "echo:" for line in body]
            deltas = [line + ("\n" if i < len(text_lines) - 1 else "") for i, line in enumerate(text_lines)]
            if self.chunk_size > 0:
                deltas = [d[i:i + self.chunk_size] for d in deltas for i in range(0, len(d), self.chunk_size)]
        stops = request.settings.get("stop_sequences") or []
        max_tokens = request.settings.get("max_output_tokens")
        finish = "stop"
        out_words = 0
        emitted = ""
        for delta in deltas:
            if stops:
                combined = emitted + delta
                hits = [combined.find(s) for s in stops if s in combined]
                if hits:
                    delta = combined[:min(hits)][len(emitted):]
                    if delta:
                        events.append({"type": "text-delta", "text": delta})
                    break
            words = len(delta.split())
            if max_tokens is not None and out_words + words > max_tokens:
                keep = delta.split()[: max(0, max_tokens - out_words)]
                if keep:
                    events.append({"type": "text-delta", "text": " ".join(keep)})
                out_words = max_tokens
                finish = "length"
                break
            out_words += words
            emitted += delta
            events.append({"type": "text-delta", "text": delta})
        events.append({"type": "finish", "finish_reason": finish, "usage": usage(prompt_words, out_words)})
        return events


class _Replay:
    """An async iterator over events already made."""

    __slots__ = ("_events",)

    def __init__(self, events: list[dict]):
        self._events = iter(events)

    def __aiter__(self) -> "_Replay":
        return self

    async def __anext__(self) -> dict:
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None


async def _paced(events: list[dict], delay: float) -> AsyncIterator[dict]:
    """``events``, each tool call and text delta after ``delay`` seconds (live runs in tests)."""
    for event in events:
        if event["type"] in ("tool-call", "text-delta"):
            await asyncio.sleep(delay)
        yield event
