"""What the ``step-finish`` and ``finish`` chunks say of the provider's exchange. Threads store
those chunks and replay them to every subscriber, so the provider's request (it holds the system
instructions) and its response headers stay out unless ``keep_provider_payloads`` is on (a debug
limit, ``MASTRA_KEEP_PROVIDER_PAYLOADS``; docs/security.md)."""

from __future__ import annotations

from ..limits import current_limits


def chunk_request(request: dict) -> dict:
    """The ``request`` metadata of ``step-finish`` / ``finish``: empty (the provider request holds
    the system instructions) unless ``keep_provider_payloads`` is on."""
    return dict(request) if current_limits().keep_provider_payloads else {}


def chunk_response(response: dict) -> dict:
    """The ``response`` metadata of a chunk: without ``messages``, and without the provider's
    response ``headers`` unless ``keep_provider_payloads`` is on."""
    keep = current_limits().keep_provider_payloads
    return {k: v for k, v in response.items() if k != "messages" and (keep or k != "headers")}


def chunk_metadata(request: dict, response: dict) -> dict:
    """The ``metadata`` of ``step-finish`` / ``finish``: the response's fields at the top (``id``,
    ``timestamp``, ``modelId``; ``headers`` when kept), where Mastra's chunks have them, then
    ``request`` and the same response fields again under ``response``, where this runtime's chunks
    had them first."""
    answered = chunk_response(response)
    return {**answered, "request": chunk_request(request), "response": answered}
