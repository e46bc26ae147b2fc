"""The small protocol every model provider implements.

A model turns a :class:`ModelRequest` into an async stream of *model events* (plain dicts):

``{"type": "response-metadata", "id", "model_id", "timestamp", "headers"}``
``{"type": "request", "body"}``            the body sent to the provider, when there is one
``{"type": "text-delta", "text"}``
``{"type": "reasoning-delta", "text"}``
``{"type": "tool-call", "tool_call_id", "tool_name", "args_text"}``  raw JSON text of the arguments
``{"type": "source", ...}``, ``{"type": "file", ...}``, ``{"type": "warning", "message"}``
``{"type": "raw", "raw_value"}``           only when ``request.include_raw`` is set
``{"type": "finish", "finish_reason", "usage": {...} or None (none reported), "provider_metadata": {...}}``

Failures raise :class:`~agents.runtime.errors.ModelError`. Messages use the runtime's model message
format (see ``agents.runtime.messages``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Protocol, runtime_checkable

FINISH_REASONS = ("stop", "length", "tool-calls", "content-filter", "error", "other")


@dataclass
class ModelRequest:
    messages: list[dict]
    tools: list[dict] = field(default_factory=list)  # [{"name", "description", "parameters"}]
    tool_choice: Any = "auto"  # "auto" | "none" | "required" | {"type": "tool", "tool_name": ...}
    settings: dict = field(default_factory=dict)  # model_settings, snake_case
    provider_options: dict = field(default_factory=dict)
    response_format: dict | None = None  # {"type": "json", "schema": {...}, "name": ...}
    abort_signal: Any = None
    include_raw: bool = False
    #: retries the provider's SDK makes by itself; None: ``settings["max_retries"]``, else the SDK's
    #: default. A run's model call sets 0: it retries, waits and falls back itself (``run.model_call``)
    sdk_retries: int | None = None


@runtime_checkable
class LanguageModel(Protocol):
    provider: str
    model_id: str

    def stream(self, request: ModelRequest) -> AsyncIterator[dict]:
        """Return an async iterator of model events for one model step."""


def is_model_object(value: Any) -> bool:
    """Whether ``value`` is a model object (it has ``stream``, as :class:`LanguageModel`), as opposed
    to a ``provider/model`` string, a config dict or a callable that picks a model per request."""
    return callable(getattr(value, "stream", None))


def usage(input_tokens: int | None = None, output_tokens: int | None = None, *,
          reasoning_tokens: int | None = None, cached_input_tokens: int | None = None) -> dict:
    """A usage dict in the runtime's snake_case form; unknown counts are left out."""
    data = {"input_tokens": input_tokens or 0, "output_tokens": output_tokens or 0,
            "total_tokens": (input_tokens or 0) + (output_tokens or 0)}
    if reasoning_tokens is not None:
        data["reasoning_tokens"] = reasoning_tokens
    if cached_input_tokens is not None:
        data["cached_input_tokens"] = cached_input_tokens
    return data
