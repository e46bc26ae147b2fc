"""``google/<model>``: Gemini through its OpenAI-compatible Chat Completions endpoint.

This is :class:`~agents.runtime.providers.openai.OpenAIChatModel` with Google's endpoint and
keys: the key is ``api_key``, else ``$GOOGLE_API_KEY``, else ``$GOOGLE_GENERATIVE_AI_API_KEY``
(a key is always required, unlike a custom OpenAI-compatible server); the base URL is
``base_url``, else ``$GOOGLE_BASE_URL``, else Google's endpoint. ``provider_options["google"]``
is merged into the request body (e.g. ``{"reasoning_effort": "low"}``, or
``{"extra_body": {"google": {...}}}`` for Gemini-specific settings).
"""

from __future__ import annotations

from typing import Any

from .base import ModelRequest
from .openai import OpenAIChatModel

GOOGLE_OPENAI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
#: JSON Schema keywords Gemini's function declarations refuse; the AI SDK's Google provider (what
#: Mastra uses) leaves them out of tool schemas, at any depth
GEMINI_DROPPED_KEYWORDS = ("additionalProperties", "$schema")


def gemini_schema(schema: Any) -> Any:
    """A copy of a tool's JSON Schema without :data:`GEMINI_DROPPED_KEYWORDS` (property names
    are kept whatever they are)."""
    if isinstance(schema, list):
        return [gemini_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in GEMINI_DROPPED_KEYWORDS:
            continue
        if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: gemini_schema(v) for name, v in value.items()}
        else:
            out[key] = gemini_schema(value)
    return out


class GoogleModel(OpenAIChatModel):
    base_url_env = "GOOGLE_BASE_URL"
    default_base_url = GOOGLE_OPENAI_BASE_URL

    def __init__(self, model_id: str, *, api_key: str | None = None, base_url: str | None = None,
                 headers: dict | None = None, timeout: float | None = None) -> None:
        super().__init__(model_id, api_key=api_key, base_url=base_url, headers=headers, provider="google",
                         env_key=("GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"), timeout=timeout)

    def build_body(self, request: ModelRequest) -> tuple[dict, list[str]]:
        body, warnings = super().build_body(request)
        for tool in body.get("tools") or []:
            function = tool["function"]
            function["parameters"] = gemini_schema(function["parameters"])
        return body, warnings

    def _keyless_allowed(self) -> bool:
        # The base URL is always set (Google's by default), so it says nothing about keys.
        return False
