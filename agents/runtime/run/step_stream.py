"""One model answer streamed as chunks: text, reasoning and tool-call parts, the step it makes.

:func:`stream_answer` is one attempt of one model (``model_call`` tries the chain's models and
retries); a complete answer becomes the step's :class:`StepResult` and its assistant message.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ModelError
from ..messages import new_id, now_iso
from ..providers.base import ModelRequest
from ..results import StepResult, Usage


def parse_args(raw: Any) -> tuple[Any, str | None]:
    """A tool call's arguments as the model sent them → ``(value, problem or None)``."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return raw, f"the model sent malformed JSON arguments: {exc}"
    if not isinstance(value, dict):
        return value, "tool arguments must be a JSON object"
    return value, None


class _Answer:
    """What one model attempt has streamed so far (the parts still open, the text, the calls)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.text_id: str | None = None
        self.reasoning_id: str | None = None
        self.calls: list[dict] = []
        self.finish: dict = {"finish_reason": "other", "usage": None}

    async def close_parts(self, run: Any) -> None:
        """Send the ``*-end`` chunk of the parts still open."""
        if self.reasoning_id is not None:
            await run.send(run.chunk("reasoning-end", {"id": self.reasoning_id}))
            self.reasoning_id = None
        if self.text_id is not None:
            await run.send(run.chunk("text-end", {"id": self.text_id}))
            self.text_id = None


async def stream_answer(run: Any, model: Any, request: ModelRequest, step_number: int, message_id: str,
                        sent: list[str]) -> StepResult:
    """Stream one model's answer to ``request`` as chunks; returns the step (its assistant message
    appended to the run). The ids of the text and reasoning parts and of the tool calls sent are
    added to ``sent``; when the model fails midway (a :class:`ModelError`), the parts still open get
    their ``*-end`` chunk before the error propagates, and nothing of the attempt enters the run's
    messages or usage."""
    step = StepResult(step_number=step_number, message_id=message_id)
    step.request = {"body": None}
    answer = _Answer()
    events = model.stream(request)
    try:
        async for event in events:
            await _event(run, model, request, step, event, answer, sent)
    except ModelError:  # a failed attempt: its open parts end here (an abort leaves them as they are)
        await answer.close_parts(run)
        raise
    await answer.close_parts(run)
    return _step_end(run, step, answer, message_id)


async def _event(run: Any, model: Any, request: ModelRequest, step: StepResult, event: dict, answer: _Answer,
                 sent: list[str]) -> None:
    """Send the chunk(s) of one model event; keep what the step is made of in ``answer``."""
    chunk, send = run.chunk, run.send
    kind = event["type"]
    if kind == "text-delta" and run.silent:  # nobody sees the chunks: the text is all the step needs
        answer.text.append(event["text"])
    elif kind == "text-delta":
        if answer.reasoning_id is not None:
            await send(chunk("reasoning-end", {"id": answer.reasoning_id}))
            answer.reasoning_id = None
        if answer.text_id is None:
            answer.text_id = new_id()
            sent.append(answer.text_id)
            await send(chunk("text-start", {"id": answer.text_id}))
        answer.text.append(event["text"])
        await send(chunk("text-delta", {"id": answer.text_id, "text": event["text"]}))
    elif kind == "tool-call":
        args, problem = parse_args(event.get("args", event.get("args_text")))
        call = chunk("tool-call", {"toolCallId": event["tool_call_id"], "toolName": event["tool_name"],
                                   "args": args})
        if problem:
            call["payload"]["argsError"] = problem
        answer.calls.append(call)
        sent.append(event["tool_call_id"])
        await send(call)
    elif kind == "reasoning-delta":
        if answer.reasoning_id is None:
            answer.reasoning_id = new_id()
            sent.append(answer.reasoning_id)
            await send(chunk("reasoning-start", {"id": answer.reasoning_id}))
        answer.reasoning.append(event["text"])
        await send(chunk("reasoning-delta", {"id": answer.reasoning_id, "text": event["text"]}))
    elif kind == "finish":
        answer.finish = event
    elif kind == "response-metadata":
        step.response = {"id": event.get("id"), "timestamp": event.get("timestamp") or now_iso(),
                         "modelId": event.get("model_id") or getattr(model, "model_id", None),
                         "headers": event.get("headers") or {}}
        if run.hooks is None and not run.silent:  # a thread's stream carries no ``response-metadata`` (as Mastra's); the step keeps it
            await send(chunk("response-metadata", dict(step.response)))
    elif kind == "request":
        step.request = {"body": event.get("body")}
    elif kind == "source":
        src = chunk("source", {k: v for k, v in event.items() if k != "type"})
        step.sources.append(src)
        await send(src)
    elif kind == "file":
        f = chunk("file", {k: v for k, v in event.items() if k != "type"})
        step.files.append(f)
        await send(f)
    elif kind == "warning":
        step.warnings.append({k: v for k, v in event.items() if k != "type"})
    elif kind == "raw":
        if request.include_raw:
            await send(chunk("raw", {"rawValue": event.get("raw_value")}))


def _step_end(run: Any, step: StepResult, answer: _Answer, message_id: str) -> StepResult:
    """The step of a complete answer; its assistant message joins the run's messages."""
    step.text = "".join(answer.text)
    step.reasoning_text = "".join(answer.reasoning)
    if answer.reasoning:
        step.reasoning = [run.chunk("reasoning", {"text": step.reasoning_text})]
    calls = answer.calls
    step.tool_calls = calls
    finish = answer.finish
    step.finish_reason = finish.get("finish_reason") or "other"
    if calls and step.finish_reason == "stop":
        step.finish_reason = "tool-calls"
    step.usage = Usage(finish.get("usage") or Usage.zero())
    step.usage_reported = finish.get("usage") is not None  # None: the provider reported no usage
    step.provider_metadata = finish.get("provider_metadata") or {}
    run.usage.add(step.usage)
    content: list[dict] = []
    if step.reasoning_text:
        content.append({"type": "reasoning", "text": step.reasoning_text})
    if step.text:
        content.append({"type": "text", "text": step.text})
    for c in calls:
        p = c["payload"]
        content.append({"type": "tool-call", "toolCallId": p["toolCallId"], "toolName": p["toolName"],
                        "args": p["args"]})
    if content:
        run.add_message({"id": message_id, "role": "assistant", "content": content, "createdAt": now_iso()})
    step.response["messages"] = [run.response_messages[-1]] if content else []
    return step
