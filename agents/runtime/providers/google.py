"""``google/<model>``: Gemini through its OpenAI-compatible Chat Completions endpoint.

This is :class:`~agents.runtime.providers.openai.OpenAIChatModel` with Google's endpoint and
keys: the key is ``api_key``, else ``$GOOGLE_API_KEY``, else ``$GOOGLE_GENERATIVE_AI_API_KEY``
(a key is always required, unlike a custom OpenAI-compatible server); the base URL is
``base_url``, else ``$GOOGLE_BASE_URL``, else Google's endpoint. ``provider_options["google"]``
is merged into the request body (e.g. ``{"reasoning_effort": "low"}``, or
``{"extra_body": {"google": {...}}}`` for Gemini-specific settings).
"""

from __future__ import annotations

from .openai import OpenAIChatModel

GOOGLE_OPENAI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"


class GoogleModel(OpenAIChatModel):
    base_url_env = "GOOGLE_BASE_URL"
    default_base_url = GOOGLE_OPENAI_BASE_URL

    def __init__(self, model_id: str, *, api_key: str | None = None, base_url: str | None = None,
                 headers: dict | None = None) -> None:
        super().__init__(model_id, api_key=api_key, base_url=base_url, headers=headers, provider="google",
                         env_key=("GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"))

    def _keyless_allowed(self) -> bool:
        # The base URL is always set (Google's by default), so it says nothing about keys.
        return False
