"""Errors as HTTP responses: ``{"error": message, "code": code, "message": message}`` with the
status the code stands for (DESIGN §5). Every runtime error has a stable ``code``
(``agents.runtime.errors``); this module is the one place that maps codes to statuses. Bad input is
a 4xx, never a 5xx: ``@mastra/client-js`` retries a 5xx, POSTs included."""

from __future__ import annotations

import logging
import math
from datetime import datetime, timezone

from django.core.exceptions import DisallowedHost
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf

from agents.runtime.errors import MastraError, RunRefusedError

logger = logging.getLogger(__name__)

STATUS_BY_CODE = {
    "not_authenticated": 401, "authentication_failed": 401, "invalid_signature": 401,
    "forbidden": 403, "resource_forbidden": 403, "permission_denied": 403,
    "model_forbidden": 403,
    "thread_not_found": 404, "run_not_found": 404, "agent_not_found": 404, "not_found": 404, "approval_not_found": 404,
    "unknown_run": 404, "notification_not_found": 404, "endpoint_not_found": 404,
    "schedule_not_found": 404, "workflow_not_found": 404, "channel_not_found": 404,
    "method_not_allowed": 405,
    "approval_stale": 409, "approval_mismatch": 409, "duplicate_signal_id": 409, "run_id_taken": 409,
    "schedule_exists": 409,
    "body_too_large": 413, "signal_too_large": 413, "notification_too_large": 413,
    "audio_too_large": 413, "audio_too_long": 413,
    "unsupported_media_type": 415, "unsupported_audio_type": 415,
    # a voice provider failed or refused (HTTP 502: the gateway's fault; nothing was stored)
    "voice_provider_error": 502,
    "too_many_pending_inputs": 429, "throttled": 429,
    # a budget is spent, or the resource's (agent's) active runs are at their limit (docs/operations.md)
    "budget_exceeded": 429, "too_many_active_runs": 429,
}


class ApiError(MastraError):
    """An error of the HTTP layer itself (a body that is not JSON, a missing field...)."""

    code = "invalid_request"


def refusal_headers(exc: RunRefusedError, *, now: datetime | None = None) -> dict:
    """``Retry-After`` of a budget refusal: the seconds until the budget resets (none for a
    per-run budget or a concurrency limit)."""
    resets = exc.details.get("resetsAt")
    if not isinstance(resets, str):
        return {}
    wait = (datetime.fromisoformat(resets) - (now or datetime.now(timezone.utc))).total_seconds()
    return {"Retry-After": str(max(1, math.ceil(wait)))}


def status_for(code: str) -> int:
    """The HTTP status of an error code: 400 for any validation code not listed."""
    return STATUS_BY_CODE.get(code, 400)


def error_response(code: str, message: str, *, status: int | None = None, headers: dict | None = None,
                   details: dict | None = None) -> JsonResponse:
    body = {"error": message, "code": code, "message": message}
    if details:
        body["details"] = details
    response = JsonResponse(body, status=status or status_for(code))
    response["Content-Length"] = str(len(response.content))
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def exception_response(exc: BaseException) -> JsonResponse:
    """The response for an exception raised while serving a request (DRF's, the runtime's, any)."""
    if isinstance(exc, RunRefusedError):  # which budget or limit, and when it resets
        return error_response(exc.code, exc.message, details=exc.details, headers=refusal_headers(exc))
    if isinstance(exc, MastraError):
        return error_response(exc.code, exc.message)
    if isinstance(exc, (OperationalError, InterfaceError)):
        # the database is unreachable or out of connections: nothing was stored, retrying may work
        logger.warning("database unavailable in an API view", exc_info=exc)
        return error_response("database_unavailable", "the database is unavailable, try again", status=503,
                              headers={"Retry-After": "1"})
    if isinstance(exc, DisallowedHost):
        return error_response("invalid_host", "the Host header is not one of ALLOWED_HOSTS", status=400)
    if isinstance(exc, Http404):  # Django's, raised by a library the view calls
        return error_response("not_found", str(exc) or "not found")
    if isinstance(exc, drf.APIException):
        code = exc.default_code if isinstance(exc.detail, (list, dict)) else getattr(exc.detail, "code", None)
        code = {"not_authenticated": "not_authenticated", "authentication_failed": "authentication_failed",
                "permission_denied": "permission_denied", "throttled": "throttled",
                "not_found": "not_found", "method_not_allowed": "method_not_allowed",
                "unsupported_media_type": "unsupported_media_type"}.get(code or exc.default_code, "invalid_request")
        headers = {}
        if isinstance(exc, drf.Throttled) and exc.wait is not None:
            headers["Retry-After"] = str(int(exc.wait) + 1)
        if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
            headers["WWW-Authenticate"] = 'Token realm="api"'
        return error_response(code, str(exc.detail), status=exc.status_code, headers=headers)
    logger.error("unexpected error in an API view", exc_info=exc)
    return error_response("internal_error", "internal error", status=500)


async def no_route(request) -> JsonResponse:
    """A path under ``/api/`` that names no route, with any method: ``404 not_found`` in the API's
    error body (a client of an API answers JSON, not the site's page), signed in or not, as
    Mastra's server answers its own unknown paths."""
    return error_response("not_found", f"no API route at {request.method} {request.path}")


def api_exception_handler(exc, context):
    """DRF's ``EXCEPTION_HANDLER``: the same bodies for DRF's own views (the schema views)."""
    return exception_response(exc)
