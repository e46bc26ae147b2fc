"""Structured output of a run (``structured_output``): the request's response format (or the schema
in the prompt), the structuring call with a separate model, and the parsed, validated object."""

from __future__ import annotations

import json
import logging
from typing import Any

from ..errors import ModelError, StructuredOutputError
from ..providers.base import ModelRequest
from ..tools import Schema, ToolValidationError, to_jsonable

logger = logging.getLogger(__name__)

DEFAULT_INSTRUCTIONS = ("Extract the answer from the conversation as JSON matching the schema. "
                        "Answer with JSON only.")


def schema_of(structured: dict) -> Schema:
    """The compiled schema of a ``structured_output`` option (compiled once, kept in the option)."""
    if "_schema" not in structured:
        structured["_schema"] = Schema(structured["schema"], field_name="options.structured_output.schema")
    return structured["_schema"]


def response_format(options: dict) -> dict | None:
    """The response format the model is asked for, or None (no structured output, or a separate
    structuring model answers it)."""
    structured = options.get("structured_output")
    if not structured or structured.get("model") is not None:
        return None
    return {"type": "json", "schema": schema_of(structured).json_schema, "name": "response"}


def inject_json_instruction(messages: list[dict], schema: dict, *, inline: bool) -> list[dict]:
    """``structured_output.json_prompt_injection``: put the schema in the prompt instead of sending a
    native response format — in a system message after the instructions (``True``/``"system"``) or
    appended to the last user message (``"inline"``). Only the request changes, not the stored messages."""
    text = (f"JSON schema:\n{json.dumps(schema)}\n"
            "You MUST answer with a JSON object that matches the JSON schema above.")
    if inline:
        for i in range(len(messages) - 1, -1, -1):
            message = messages[i]
            if message["role"] == "user":
                content = message["content"]
                content = (content + "\n\n" + text if isinstance(content, str)
                           else list(content) + [{"type": "text", "text": text}])
                return messages[:i] + [{**message, "content": content}] + messages[i + 1:]
    leading = 0
    while leading < len(messages) and messages[leading]["role"] == "system":
        leading += 1
    return messages[:leading] + [{"role": "system", "content": text}] + messages[leading:]


async def structure(run: Any, text: str) -> None:
    """Parse and validate the run's answer into ``run.object`` and send ``object-result``.

    An answer that does not match the schema, or a structuring model that fails (``model``), is
    handled by ``error_strategy``: ``strict`` (the default) raises :class:`StructuredOutputError`
    (the structuring model's :class:`ModelError` as it is), ``fallback`` uses ``fallback_value``,
    ``warn`` records a warning. The option's ``logger`` hears of each, as Mastra's does: ``error``
    (strict), ``warning`` (warn), ``info`` (fallback)."""
    structured = run.options.get("structured_output")
    if not structured or run.finish_reason in ("error", "abort", "suspended"):
        return
    schema = schema_of(structured)
    problem, error = None, None
    if structured.get("model") is not None:
        try:
            text = await _structuring_call(run, structured, schema)
        except ModelError as exc:
            problem, error = f"structuring failed: {exc}", exc
    if problem is None:
        try:
            run.object = to_jsonable(schema.validate(json.loads(_strip_fences(text))))
        except (ValueError, ToolValidationError) as exc:
            problem = f"structured output does not match the schema: {exc}"
            error = StructuredOutputError(problem)
    if problem is not None:
        _apply_strategy(run, structured, problem, error)
    await run.send(run.chunk("object-result", {"object": run.object}))


def _apply_strategy(run: Any, structured: dict, problem: str, error: Exception) -> None:
    """``error_strategy`` for an answer that could not be structured (``problem`` says why;
    ``strict`` raises ``error``)."""
    strategy = structured.get("error_strategy", "strict")
    told = structured.get("logger")
    line = f"run {run.run_id}: {problem}"
    if strategy == "fallback":
        if told is not None:
            told.info(f"{line} (using fallback)")
        run.object = structured.get("fallback_value")
        run.used_fallback_value = True
    elif strategy == "warn":
        (told or logger).warning(line)
        run.steps[-1].warnings.append({"type": "structured-output", "message": problem})
    else:
        if told is not None:
            told.error(line)
        raise error


async def _structuring_call(run: Any, structured: dict, schema: Schema) -> str:
    model = run.resolve_model(structured["model"]) if run.resolve_model else structured["model"]
    instructions = structured.get("instructions") or DEFAULT_INSTRUCTIONS
    transcript = "\n".join(
        f"{m['role']}: {m['content'] if isinstance(m['content'], str) else json.dumps(m['content'], default=str)}"
        for m in run.messages)
    request = ModelRequest(
        messages=[{"role": "system", "content": instructions},
                  {"role": "user", "content": transcript}],
        response_format={"type": "json", "schema": schema.json_schema, "name": "response"},
        provider_options=structured.get("provider_options") or {}, abort_signal=run.abort_signal)
    parts = []
    async for event in model.stream(request):
        if event["type"] == "text-delta":
            parts.append(event["text"])
        elif event["type"] == "finish":
            run.usage.add(event.get("usage"))
    return "".join(parts)


def _strip_fences(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped
