"""Result objects of a run: usage, step results and the full output of ``generate()``.

Attributes are snake_case for Python; ``to_dict()`` gives Mastra's camelCase JSON for the wire.
Tool calls and tool results stay in Mastra's chunk form (``{"type", "runId", "from", "payload"}``).
``messages`` and ``remembered_messages`` hold the runtime's model messages (what the run showed the
model); on the wire they are Mastra's ``MastraDBMessage`` (:func:`db_messages`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .naming import camel_keys
from .stored_messages import answers_stamped, step_models, stored_form
from .ui_messages import ui_messages

#: the usage fields a provider may report (missing ones read as None)
USAGE_FIELDS = frozenset({"input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens"})


#: what :meth:`Usage.zero` copies (a copy of a dict is quicker than keyword arguments)
_ZERO_USAGE = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


class Usage(dict):
    """Token usage: a dict with attribute access (``usage.input_tokens``)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            if name in USAGE_FIELDS:
                return None
            raise AttributeError(name) from None

    def add(self, other: dict | None) -> None:
        for key, value in (other or {}).items():
            if isinstance(value, (int, float)) and value is not None:
                self[key] = self.get(key, 0) + value

    def camel(self) -> dict:
        return camel_keys(self)

    @classmethod
    def zero(cls) -> "Usage":
        return cls(_ZERO_USAGE)


@dataclass
class StepResult:
    step_number: int
    text: str = ""
    reasoning: list = field(default_factory=list)
    reasoning_text: str = ""
    tool_calls: list = field(default_factory=list)
    tool_results: list = field(default_factory=list)
    finish_reason: str = "other"
    usage: Usage = field(default_factory=Usage.zero)
    request: dict = field(default_factory=dict)
    response: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    provider_metadata: dict = field(default_factory=dict)
    sources: list = field(default_factory=list)
    files: list = field(default_factory=list)
    is_continued: bool = False
    #: the model that answered this step, ``provider/model_id`` (a fallback chain may change it)
    model: str | None = None
    #: the failed attempts of this step before that answer: ``{"model", "code", "status", "message",
    #: "retryAfter"?, "delayMs"?}`` (a model skipped by its open circuit breaker: code ``circuit_open``)
    attempts: list = field(default_factory=list)
    #: False when the provider reported no usage for this step (``usage`` reads zeros, as Mastra's;
    #: the cost ledger records the step's tokens as unknown)
    usage_reported: bool = True
    #: the id of the step's assistant message: the ``messageId`` of its ``step-start`` and
    #: ``step-finish`` chunks
    message_id: str | None = None

    @property
    def step_type(self) -> str:
        """Mastra's ``stepType``: ``initial`` for a run's first step, ``tool-result`` for the others
        (each follows the tool results, or the inputs, of the step before)."""
        return "initial" if self.step_number == 0 else "tool-result"

    @property
    def content(self) -> list[dict]:
        """The step's answer as the AI SDK's (v5) model content, as Mastra's step ``content``: its
        reasoning, text, sources and files, then each tool call (``input``) and its result
        (``output``: ``{"type": "json" | "text" | "error-json" | "error-text", "value"}``)."""
        return step_content(self)

    def to_dict(self) -> dict:
        """Mastra's camelCase JSON form of the step. As Mastra's server, it leaves out what the
        step does not have (:func:`wire_request`, :func:`wire_response`, no ``providerMetadata``
        when the provider gave none); a step's ``reasoningText`` is ``""`` without reasoning, as
        Mastra's."""
        data = {
            "stepNumber": self.step_number, "stepType": self.step_type, "content": self.content,
            "text": self.text, "reasoning": self.reasoning,
            "reasoningText": self.reasoning_text, "toolCalls": self.tool_calls, "toolResults": self.tool_results,
            "finishReason": self.finish_reason, "usage": self.usage.camel(), "request": wire_request(self.request),
            "response": wire_response(self.response), "warnings": self.warnings,
            "sources": self.sources, "files": self.files, "isContinued": self.is_continued,
            "model": self.model, "attempts": self.attempts,
            # Mastra's split by the AI SDK's ``dynamic`` flag, which no tool call of this runtime
            # carries: empty, as Mastra's are for its own tools
            "staticToolCalls": [], "dynamicToolCalls": [], "staticToolResults": [], "dynamicToolResults": [],
        }
        if self.provider_metadata:
            data["providerMetadata"] = self.provider_metadata
        return data

    def to_state(self) -> dict:
        """JSON-safe state for storing a suspended run."""
        data = dict(self.__dict__)
        data["usage"] = dict(self.usage)
        return data

    @classmethod
    def from_state(cls, data: dict) -> "StepResult":
        data = dict(data)
        data["usage"] = Usage(data.get("usage") or {})
        return cls(**data)


@dataclass
class GenerateResult:
    """Everything ``generate()`` returns (the seed's "Valeurs renvoyées")."""

    run_id: str
    text: str = ""
    object: Any = None
    tool_calls: list = field(default_factory=list)
    tool_results: list = field(default_factory=list)
    usage: Usage = field(default_factory=Usage.zero)
    total_usage: Usage = field(default_factory=Usage.zero)
    steps: list[StepResult] = field(default_factory=list)
    finish_reason: str = "other"
    response: dict = field(default_factory=dict)
    request: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    provider_metadata: dict = field(default_factory=dict)
    reasoning: list = field(default_factory=list)
    reasoning_text: str = ""
    sources: list = field(default_factory=list)
    files: list = field(default_factory=list)
    suspend_payload: dict | None = None
    #: the structured output is ``fallback_value`` (``error_strategy: "fallback"``, the answer did not match)
    used_fallback_value: bool = False
    messages: list = field(default_factory=list)
    remembered_messages: list = field(default_factory=list)
    error: Exception | None = None
    tripwire: dict | None = None
    trace_id: str | None = None
    span_id: str | None = None
    #: what the scorers score, with ``return_scorer_data`` (``{"input": {...}, "output": [...]}``)
    scoring_data: dict | None = None
    #: ``response["messages"]`` as displays show them, when the agent or its tools have display
    #: transforms (docs/agents.md); None: the real ones are shown (:attr:`ui_messages`)
    display_messages: list | None = None

    @property
    def models(self) -> list[str | None]:
        """The model that answered each step, in order (``provider/model_id``)."""
        return [s.model for s in self.steps]

    @property
    def db_messages(self) -> list[dict]:
        """The run's response messages (``response["messages"]``) in Mastra's stored format, as
        ``messages`` are on the wire (Mastra's ``response.dbMessages``)."""
        return db_messages(self.response.get("messages") or [], thread_of=self.messages, steps=self.steps)

    @property
    def ui_messages(self) -> list[dict]:
        """The run's response messages as the AI SDK's ``UIMessage`` (v5), through the display
        transforms (Mastra's ``response.uiMessages``; :mod:`.ui_messages`)."""
        shown = self.display_messages if self.display_messages is not None else self.response.get("messages")
        return ui_messages(db_messages(shown or [], thread_of=self.messages, steps=self.steps))

    def to_dict(self) -> dict:
        """Mastra's camelCase JSON form (what the HTTP API answers). As Mastra's server, it leaves
        out the keys whose value the run does not have (Mastra's are ``undefined``, which its JSON
        drops): ``object`` without structured output, ``error``, ``tripwire``, ``suspendPayload``
        and ``resumeSchema`` unless the run failed, tripped or suspended, ``reasoningText``
        without reasoning, ``providerMetadata`` when the provider gave none, ``traceId`` /
        ``spanId`` when the run was not traced, the request's ``body`` and the response's
        ``headers`` unless kept (``MASTRA_KEEP_PROVIDER_PAYLOADS``)."""
        data = {
            "runId": self.run_id, "text": self.text,
            "usedFallbackValue": self.used_fallback_value, "toolCalls": self.tool_calls,
            "toolResults": self.tool_results, "usage": self.usage.camel(), "totalUsage": self.total_usage.camel(),
            "steps": [s.to_dict() for s in self.steps], "finishReason": self.finish_reason,
            "response": self._response_dict(), "request": wire_request(self.request), "warnings": self.warnings,
            "reasoning": self.reasoning, "sources": self.sources, "files": self.files,
            "messages": db_messages(self.messages, steps=self.steps),
            "rememberedMessages": db_messages(self.remembered_messages),
        }
        optional = {
            "object": self.object, "providerMetadata": self.provider_metadata or None,
            "reasoningText": self.reasoning_text or None, "tripwire": self.tripwire,
            "traceId": self.trace_id, "spanId": self.span_id,
        }
        data.update((key, value) for key, value in optional.items() if value is not None)
        if self.error is not None:
            data["error"] = {"message": str(self.error), "code": getattr(self.error, "code", "error")}
        if self.suspend_payload is not None:
            data["suspendPayload"] = suspend = _camel_suspend(self.suspend_payload)
            if "resumeSchema" in suspend:  # a tool that suspended itself with a schema: both, as Mastra's
                data["resumeSchema"] = suspend["resumeSchema"]
        if self.scoring_data is not None:  # only with return_scorer_data, as Mastra's
            data["scoringData"] = _camel_scoring(self.scoring_data)
        return data

    def _response_dict(self) -> dict:
        if not self.response:  # no step answered
            return self.response
        stored = self.db_messages
        shown = ui_messages(stored) if self.display_messages is None else self.ui_messages
        return {**wire_response(self.response), "uiMessages": shown, "dbMessages": stored}


def wire_request(request: dict) -> dict:
    """A step's (or the run's) ``request`` on the wire: without its ``body`` unless it was kept
    (``MASTRA_KEEP_PROVIDER_PAYLOADS``), as Mastra's ``{}`` when the model gave none."""
    return _without_empty(request, "body")


def wire_response(response: dict) -> dict:
    """A step's (or the run's) ``response`` on the wire: without ``headers`` unless they were kept
    (``MASTRA_KEEP_PROVIDER_PAYLOADS``; a provider may echo a credential there)."""
    return _without_empty(response, "headers")


def _without_empty(data: dict, key: str) -> dict:
    """``data`` without ``key`` when its value is empty (``None``, ``{}``); ``data`` itself otherwise."""
    if key in data and not data[key]:
        return {k: v for k, v in data.items() if k != key}
    return data


def step_content(step: StepResult) -> list[dict]:
    """:attr:`StepResult.content`."""
    content: list[dict] = []
    if step.reasoning_text:
        content.append({"type": "reasoning", "text": step.reasoning_text})
    if step.text:
        content.append({"type": "text", "text": step.text})
    content.extend({"type": "source", **c["payload"]} for c in step.sources)
    content.extend({"type": "file", **c["payload"]} for c in step.files)
    inputs = {}
    for call in step.tool_calls:
        p = call["payload"]
        inputs[p["toolCallId"]] = p.get("args")
        content.append({"type": "tool-call", "toolCallId": p["toolCallId"], "toolName": p["toolName"],
                        "input": p.get("args")})
    for item in step.tool_results:
        p = item["payload"]
        result = p.get("result")
        kind = "text" if isinstance(result, str) else "json"
        content.append({"type": "tool-result", "toolCallId": p["toolCallId"], "toolName": p["toolName"],
                        "input": inputs.get(p["toolCallId"]),
                        "output": {"type": f"error-{kind}" if p.get("isError") else kind, "value": result}})
    return content


def db_messages(messages: list[dict], *, thread_of: list[dict] | None = None,
                steps: list | None = None) -> list[dict]:
    """A run's messages (the runtime's model messages) as Mastra's server answers them: its
    ``MastraDBMessage`` (the stored format, :mod:`.stored_messages`: ``content`` is ``{"format": 2,
    "parts", ...}``, a tool's results on the assistant message that called it, no ``tool`` role),
    each with the ``threadId`` and ``resourceId`` of the run's memory thread when it has one (read
    from ``thread_of``, the run's messages, when given: its input messages carry them). With the
    run's ``steps``, each answer names the model that answered its step (``content.metadata``:
    ``modelId``, ``provider``), as Mastra's do."""
    if not messages:
        return []
    out = stored_form(messages)
    if steps:
        out = answers_stamped(out, models=step_models(steps))
    thread = next((m for m in (messages if thread_of is None else thread_of) if m.get("threadId")), None)
    if thread is not None:
        envelope = {"threadId": thread["threadId"], "resourceId": thread.get("resourceId")}
        for message in out:
            message.update(envelope)
    return out


def _camel_scoring(data: dict | None) -> dict | None:
    if data is None:
        return None
    return {"input": camel_keys(data["input"]), "output": data["output"]}


def _camel_suspend(payload: dict | None) -> dict | None:
    if payload is None:
        return None
    out = {"toolCallId": payload["tool_call_id"], "toolName": payload["tool_name"], "args": payload["args"]}
    if "suspend_payload" in payload:  # a tool that suspended itself (not an approval)
        out["suspendPayload"] = payload["suspend_payload"]
        if payload.get("resume_schema") is not None:  # as its ``tool-call-suspended`` chunk
            out["resumeSchema"] = payload["resume_schema"]
    return out
