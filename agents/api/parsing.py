"""Request bodies and query strings: JSON objects within ``MASTRA_API_MAX_BODY`` bytes, fields by
their camelCase wire names, generate options as the runtime's snake_case keywords.

Bodies are decoded by ``agents.runtime.json_input.json_decode`` (strict JSON nested at most 64
levels, ``invalid_json``; no lone surrogate or NUL in any string or key, ``invalid_text``): what
passes can be walked, converted and stored on every database."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from agents.runtime.json_input import json_decode, text_check
from agents.runtime.naming import snake_keys

from .errors import ApiError

MISSING = object()
#: the largest whole number a query or body field takes (a signed 64-bit database integer)
MAX_INT = 2 ** 63 - 1


def body_limit() -> int:
    return settings.MASTRA_API_MAX_BODY


def raw_body(request) -> bytes:
    """The request's bytes; ``body_too_large`` (413) past ``MASTRA_API_MAX_BODY``."""
    limit = body_limit()
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise ApiError(f"the body is larger than {limit} bytes", code="body_too_large")
    try:
        raw = request.body
    except RequestDataTooBig:
        raise ApiError(f"the body is larger than {limit} bytes", code="body_too_large") from None
    if len(raw) > limit:
        raise ApiError(f"the body is larger than {limit} bytes", code="body_too_large")
    return raw


def json_object(raw: bytes) -> dict:
    """``raw`` as a JSON object (``{}`` when empty): ``invalid_json`` (400) for bytes that are not
    strict JSON or nest too deep, ``invalid_text`` (400) for a lone surrogate or a NUL in any
    string or key, ``invalid_body`` (400) for JSON that is not an object."""
    if not raw.strip():
        return {}
    data = json_decode(raw, what="the body")
    if not isinstance(data, dict):
        raise ApiError("the body must be a JSON object", code="invalid_body")
    return data


def json_body(request) -> dict:
    """The request's JSON object (:func:`raw_body`, then :func:`json_object`)."""
    return json_object(raw_body(request))


def request_text_check(request, url_kwargs: dict) -> None:
    """Refuse a query string or URL part that holds a NUL character (``invalid_text``, 400):
    PostgreSQL cannot compare text with one. (Django decodes both with ``errors="replace"``, so
    they hold no lone surrogate.)"""
    for name, values in request.GET.lists():
        text_check(name, "a query parameter's name")
        for value in values:
            text_check(value, f"the query parameter {name}")
    for name, value in url_kwargs.items():
        if isinstance(value, str):
            text_check(value, f"the URL's {name}")


def optional_str(data: dict, name: str, *, max_length: int | None = None) -> str | None:
    """``data[name]`` when it is a non-empty string (of at most ``max_length`` characters, the
    column that stores it), None when absent, null or empty; ``invalid_field`` (400) otherwise."""
    value = data.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ApiError(f"{name} must be a string", code="invalid_field")
    if max_length is not None and len(value) > max_length:
        raise ApiError(f"{name} must be at most {max_length} characters", code="invalid_field")
    return value


def required_str(data: dict, name: str, *, code: str = "missing_field") -> str:
    value = optional_str(data, name)
    if value is None:
        raise ApiError(f"{name} is required", code=code)
    return value


def optional_dict(data: dict, name: str) -> dict | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ApiError(f"{name} must be an object", code="invalid_field")
    return value


def optional_int(data: Any, name: str, *, minimum: int = 0, maximum: int = MAX_INT) -> int | None:
    """A whole number from ``minimum`` to ``maximum`` from a JSON body or a query string (``"3"``:
    ASCII digits only, at most 19 of them); ``invalid_field`` otherwise. (``str.isdigit`` also
    accepts ``²`` and ``١٢``, which ``int()`` refuses or reads, and ``int()`` refuses more than
    4,300 digits: both would be errors of the server, not of the caller.)"""
    value = data.get(name)
    if value is None or value == "":
        return None
    bound = f" from {minimum}" + (f" to {maximum}" if maximum != MAX_INT else "")
    if isinstance(value, str):
        value = value.strip()
        digits = value[1:] if value.startswith("-") else value
        if not (digits.isascii() and digits.isdigit() and len(digits) <= 19):
            raise ApiError(f"{name} must be a whole number{bound}", code="invalid_field")
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
        raise ApiError(f"{name} must be a whole number{bound}", code="invalid_field")
    return value


def query_bool(request, name: str) -> bool:
    return request.GET.get(name, "").strip().lower() in ("1", "true", "yes", "on")


#: body keys of the generate and stream routes that are not generate options
EXECUTION_KEYS = frozenset({"messages", "memory"})
#: Mastra's server accepts these and ignores them here (versions, legacy thread fields, tracing)
IGNORED_OPTIONS = frozenset({"format", "output", "tracing_options", "tracing_context", "versions"})


def execution_options(body: dict) -> dict:
    """The generate options of a request body, snake_case (``maxSteps`` → ``max_steps``;
    ``memory.options.lastMessages`` → ``last_messages``), without ``messages`` and ``memory``
    (the view checks memory against the caller first)."""
    options = {k: v for k, v in snake_keys(body).items() if k not in EXECUTION_KEYS and k not in IGNORED_OPTIONS}
    for name in ("model_settings", "structured_output"):
        if isinstance(options.get(name), dict):
            options[name] = snake_keys(options[name])
    return options


def memory_option(value: Any) -> tuple[str | None, str | None, dict]:
    """``memory`` of a body (``{thread, resource, options}``; ``thread`` a string or ``{id}``) as
    ``(thread_id, resource_id, other keys snake_case)``; ``invalid_field`` for another shape."""
    if not isinstance(value, dict):
        raise ApiError("memory must be an object {thread, resource, options}", code="invalid_field")
    memory = snake_keys(value)
    thread = memory.pop("thread", None)
    if isinstance(thread, dict):
        thread = thread.get("id")
    if thread is not None and (not isinstance(thread, str) or not thread):
        raise ApiError("memory.thread must be a thread id", code="invalid_field")
    resource = memory.pop("resource", None)
    if resource is not None and not isinstance(resource, str):
        raise ApiError("memory.resource must be a string", code="invalid_field")
    if isinstance(memory.get("options"), dict):
        memory["options"] = snake_keys(memory["options"])
    return thread, resource or None, memory
