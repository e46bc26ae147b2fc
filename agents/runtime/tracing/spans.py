"""Spans and traces of runs: ids in the W3C / OpenTelemetry form (trace id 32 hex characters, span id
16), a root span per run (``agent_run``) and child spans for model steps, tool calls, processors
and delegations; tools and callbacks add their own through ``tracing_context["current_span"]``."""

from __future__ import annotations

import re
import time
from typing import Any

from ..errors import AgentConfigError
from ..naming import option_dict, snake_keys
from ..random_ids import random_hex
from ..timestamps import iso_of

TRACE_ID = re.compile(r"^[0-9a-f]{1,32}$")
SPAN_ID = re.compile(r"^[0-9a-f]{1,16}$")
OPTION_KEYS = frozenset({"metadata", "request_context_keys", "tags", "trace_id", "parent_span_id", "hide_input",
                         "hide_output", "export"})


def new_trace_id() -> str:
    return random_hex(16)


def new_span_id() -> str:
    return random_hex(8)


class Span:
    """One timed operation of a trace. ``create_child_span`` opens a child; ``update`` adds
    attributes or metadata; ``end`` closes it with its output (or ``error``)."""

    __slots__ = ("trace", "trace_id", "span_id", "parent_span_id", "name", "type", "attributes", "metadata", "input",
                 "output", "error", "started", "ended")

    def __init__(self, trace: "Trace", *, name: str, type: str, parent: "Span | None" = None,
                 parent_span_id: str | None = None, attributes: dict | None = None, metadata: dict | None = None,
                 input: Any = None):
        self.trace = trace
        self.trace_id = trace.trace_id
        self.span_id = new_span_id()
        self.parent_span_id = parent.span_id if parent is not None else parent_span_id
        self.name = name
        self.type = type
        self.attributes = dict(attributes or {})
        self.metadata = dict(metadata or {})
        self.input = None if trace.hide_input else input
        self.output: Any = None
        self.error: dict | None = None
        self.started = time.time()
        self.ended: float | None = None
        trace.spans.append(self)

    def create_child_span(self, *, name: str, type: str = "generic", attributes: dict | None = None,
                          metadata: dict | None = None, input: Any = None) -> "Span":
        return Span(self.trace, name=name, type=type, parent=self, attributes=attributes, metadata=metadata,
                    input=input)

    def update(self, *, attributes: dict | None = None, metadata: dict | None = None) -> None:
        self.attributes.update(attributes or {})
        self.metadata.update(metadata or {})

    def end(self, *, output: Any = None, error: Any = None, attributes: dict | None = None) -> None:
        if self.ended is not None:
            return
        if attributes:
            self.attributes.update(attributes)
        if output is not None and not self.trace.hide_output:
            self.output = output
        if error is not None:
            self.error = {"message": str(error), "code": getattr(error, "code", None) or type(error).__name__}
        self.ended = time.time()

    def to_dict(self) -> dict:
        """JSON-safe form (what stores and exporters get)."""
        return {"trace_id": self.trace_id, "span_id": self.span_id, "parent_span_id": self.parent_span_id,
                "name": self.name, "type": self.type, "attributes": self.attributes, "metadata": self.metadata,
                "input": self.input, "output": self.output, "error": self.error, "started_at": iso_of(self.started),
                "ended_at": iso_of(self.ended) if self.ended is not None else None,
                "duration_ms": int((self.ended - self.started) * 1000) if self.ended is not None else None}

    def __repr__(self) -> str:
        return f"<Span {self.type} {self.name} {self.span_id}>"


class Trace:
    """The spans of one run (a run under another run's span shares its trace id)."""

    __slots__ = ("trace_id", "hide_input", "hide_output", "tags", "export", "spans")

    def __init__(self, *, trace_id: str | None = None, hide_input: bool = False, hide_output: bool = False,
                 tags: list[str] | None = None, export: bool = True):
        self.trace_id = trace_id or new_trace_id()
        self.hide_input = hide_input
        self.hide_output = hide_output
        self.tags = list(tags or [])
        self.export = export
        self.spans: list[Span] = []


def tracing_options_check(value: Any) -> dict:
    """``tracing_options`` (snake_case) with ids checked: ``trace_id`` 1-32 and ``parent_span_id``
    1-16 lowercase hex characters; raises :class:`AgentConfigError` (code ``invalid_trace_id``)."""
    value = option_dict(value, "options.tracing_options", OPTION_KEYS)
    if value.get("metadata") is not None and not isinstance(value["metadata"], dict):
        raise AgentConfigError("options.tracing_options.metadata", "must be a dict")
    for key in ("request_context_keys", "tags"):
        items = value.get(key)
        if items is not None and (not isinstance(items, list) or not all(isinstance(i, str) and i for i in items)):
            raise AgentConfigError(f"options.tracing_options.{key}", "must be a list of strings")
    if value.get("trace_id") is not None and not (isinstance(value["trace_id"], str) and TRACE_ID.match(value["trace_id"])):
        raise AgentConfigError("options.tracing_options.trace_id", "must be 1 to 32 lowercase hexadecimal characters",
                               code="invalid_trace_id")
    parent = value.get("parent_span_id")
    if parent is not None and not (isinstance(parent, str) and SPAN_ID.match(parent)):
        raise AgentConfigError("options.tracing_options.parent_span_id",
                               "must be 1 to 16 lowercase hexadecimal characters", code="invalid_trace_id")
    for key in ("hide_input", "hide_output", "export"):
        if key in value and not isinstance(value[key], bool):
            raise AgentConfigError(f"options.tracing_options.{key}", "must be a bool")
    return value


def tracing_context_check(value: Any) -> dict:
    """``tracing_context``: ``{"current_span": Span}`` (the run's spans go under it)."""
    if not isinstance(value, dict):
        raise AgentConfigError("options.tracing_context", "must be {'current_span': span}")
    value = snake_keys(value)
    if set(value) - {"current_span"}:
        raise AgentConfigError(f"options.tracing_context.{sorted(set(value) - {'current_span'})[0]}", "unknown key")
    if value.get("current_span") is not None and not isinstance(value["current_span"], Span):
        raise AgentConfigError("options.tracing_context.current_span", "must be a span of this runtime")
    return value


def dotted(data: Any, path: str) -> Any:
    """``data["a"]["b"]`` for ``"a.b"`` (None when a part is missing)."""
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def run_span_open(*, agent: Any, run_id: str, options: dict, request_context: dict, input: Any) -> Span:
    """The root span of a run: under ``tracing_context.current_span`` when given (same trace), else
    in ``tracing_options.trace_id`` (or a new trace) under ``tracing_options.parent_span_id``."""
    opts = options.get("tracing_options") or {}
    current = (options.get("tracing_context") or {}).get("current_span")
    metadata = dict(opts.get("metadata") or {})
    for key in opts.get("request_context_keys") or []:
        value = dotted(request_context, key)
        if value is not None:
            metadata[key] = value
    attributes = {"agent_id": getattr(agent, "id", None), "agent_name": getattr(agent, "name", None),
                  "run_id": run_id}
    if current is not None:
        span = current.create_child_span(name=f"agent run: '{getattr(agent, 'id', '')}'", type="agent_run",
                                         attributes=attributes, metadata=metadata, input=input)
    else:
        trace = Trace(trace_id=opts.get("trace_id"), hide_input=bool(opts.get("hide_input")),
                      hide_output=bool(opts.get("hide_output")), tags=opts.get("tags"),
                      export=opts.get("export", True))
        span = Span(trace, name=f"agent run: '{getattr(agent, 'id', '')}'", type="agent_run",
                    parent_span_id=opts.get("parent_span_id"), attributes=attributes, metadata=metadata, input=input)
    if opts.get("tags"):
        span.update(attributes={"tags": list(opts["tags"])})
    return span


__all__ = ["Span", "Trace", "dotted", "new_span_id", "new_trace_id", "run_span_open", "tracing_context_check",
           "tracing_options_check"]
