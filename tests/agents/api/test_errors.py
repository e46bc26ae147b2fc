"""The error bodies of the API: one shape, a stable code, the status the code stands for."""

import json

import pytest
from django.db import OperationalError

from agents.access import AccessDenied, ThreadNotFound
from agents.api.errors import exception_response, status_for
from agents.runtime.errors import SignalError


def test_codes_map_to_statuses():
    assert status_for("thread_not_found") == 404
    assert status_for("resource_forbidden") == status_for("model_forbidden") == 403
    assert status_for("run_id_taken") == 409 and status_for("run_not_found") == 404
    assert status_for("too_many_pending_inputs") == 429
    assert status_for("body_too_large") == 413
    assert status_for("invalid_attribute_value") == 400  # any validation code


def test_runtime_errors_become_the_one_body():
    for exc, status in ((SignalError("bad", code="invalid_behavior"), 400), (ThreadNotFound("gone"), 404),
                        (AccessDenied("no", code="resource_forbidden"), 403)):
        response = exception_response(exc)
        assert response.status_code == status
        body = json.loads(response.content)
        assert body == {"error": exc.message, "code": exc.code, "message": exc.message}
        assert int(response["Content-Length"]) == len(response.content)


def test_an_unreachable_database_is_503_with_retry_after():
    response = exception_response(OperationalError("sorry, too many clients already"))
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert json.loads(response.content)["code"] == "database_unavailable"


def test_a_bug_is_500_without_details():
    response = exception_response(KeyError("secret"))
    assert response.status_code == 500
    assert json.loads(response.content) == {"error": "internal error", "code": "internal_error",
                                            "message": "internal error"}


def test_djangos_http404_from_a_library_is_not_found():
    from django.http import Http404

    response = exception_response(Http404())
    assert response.status_code == 404
    assert json.loads(response.content) == {"error": "not found", "code": "not_found", "message": "not found"}
    assert json.loads(exception_response(Http404("no such page")).content)["message"] == "no such page"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("method, path", [
    ("post", "/api/memory/threads/t1/clone"),  # Mastra's routes this server does not serve
    ("post", "/api/memory/messages/delete"),
    ("get", "/api/nothing/here"),
    ("delete", "/api/agents/echo/nothing"),
    ("post", "/api/webhooks/nowhere/at/all"),
])
async def test_a_path_under_api_that_names_no_route_is_a_json_404(method, path):
    """Signed in or not: the API's error body, not the site's page (``@mastra/client-js`` shows a
    client of a newer Mastra the code and the route it asked for)."""
    from django.test import AsyncClient

    response = await getattr(AsyncClient(), method)(path)
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {"error": f"no API route at {method.upper()} {path}", "code": "not_found",
                                            "message": f"no API route at {method.upper()} {path}"}
