"""The OpenAPI schema lists every route; schemathesis fuzzes each operation against a live server:
no 5xx, every response matches the schema (status, content type, body)."""

import json
import urllib.request

import pytest
from django.contrib.auth import get_user_model

from tests.agents.api.live import live_server, user_token

EXPECTED_OPERATIONS = {
    "GET /api/agents", "GET /api/agents/{agent_id}", "POST /api/agents/{agent_id}/generate",
    "POST /api/agents/{agent_id}/stream", "POST /api/agents/{agent_id}/send-message",
    "POST /api/agents/{agent_id}/queue-message", "POST /api/agents/{agent_id}/signals",
    "POST /api/agents/{agent_id}/state-signals", "POST /api/agents/{agent_id}/notifications",
    "POST /api/agents/{agent_id}/threads/subscribe", "POST /api/agents/{agent_id}/threads/abort",
    "GET /api/agents/{agent_id}/threads/queue", "POST /api/agents/{agent_id}/threads/queue/cancel",
    "POST /api/agents/{agent_id}/send-tool-approval", "POST /api/agents/{agent_id}/approve-tool-call",
    "POST /api/agents/{agent_id}/decline-tool-call", "POST /api/agents/{agent_id}/approve-tool-call-generate",
    "POST /api/agents/{agent_id}/decline-tool-call-generate", "GET /api/memory/threads", "POST /api/memory/threads",
    "GET /api/memory/threads/{thread_id}", "PATCH /api/memory/threads/{thread_id}",
    "DELETE /api/memory/threads/{thread_id}", "GET /api/memory/threads/{thread_id}/messages",
    "GET /api/notifications", "PATCH /api/notifications/{record_id}",
    "POST /api/webhooks/github/{name}", "POST /api/webhooks/slack/{name}",
    "GET /api/schedules", "POST /api/schedules", "GET /api/schedules/{schedule_id}",
    "PATCH /api/schedules/{schedule_id}", "DELETE /api/schedules/{schedule_id}",
    "POST /api/schedules/{schedule_id}/pause", "POST /api/schedules/{schedule_id}/resume",
    "POST /api/schedules/{schedule_id}/run", "GET /api/schedules/{schedule_id}/triggers",
    "POST /api/agents/{agent_id}/channels/{platform}/webhook",
    "GET /api/agents/{agent_id}/voice/speakers", "GET /api/agents/{agent_id}/speakers",
    "GET /api/agents/{agent_id}/voice/listener", "POST /api/agents/{agent_id}/voice/speak",
    "POST /api/agents/{agent_id}/speak", "POST /api/agents/{agent_id}/voice/listen",
    "POST /api/agents/{agent_id}/listen",
}
#: streams that stay open until the client leaves: not something a fuzzer can wait for
NOT_FUZZED = {"POST /api/agents/{agent_id}/threads/subscribe"}


def operations(schema: dict) -> set[str]:
    return {f"{method.upper()} {path}" for path, item in schema["paths"].items() for method in item
            if not path.startswith(("/api/schema", "/api/docs"))}


@pytest.mark.django_db(transaction=True)
def test_the_schema_and_the_docs_list_every_route(client):
    client.force_login(get_user_model().objects.create_user("reader"))
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert operations(schema) == EXPECTED_OPERATIONS
    assert set(schema["components"]["securitySchemes"]) == {"tokenAuth", "bearerAuth", "cookieAuth"}
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


def test_schemathesis_finds_no_server_error_and_no_schema_mismatch(db_url_for_subprocess, tmp_path):
    import hypothesis
    import schemathesis
    from hypothesis import HealthCheck, Phase
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                                   status_code_conformance)

    token = user_token("fuzz")
    with live_server(db_url_for_subprocess, tmp_path / "daphne.out", MASTRA_API_SEND_RATE="100000/min") as base:
        request = urllib.request.Request(f"{base}/api/schema/?format=json", headers={"Authorization": f"Token {token}"})
        with urllib.request.urlopen(request) as reply:
            raw = json.loads(reply.read())
        schema = schemathesis.openapi.from_dict(raw)
        headers = {"Authorization": f"Token {token}"}
        checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
        failures = []
        seen = set()
        for result in schema.get_all_operations():
            operation = result.ok()
            if operation.label in NOT_FUZZED:
                continue
            seen.add(operation.label)

            @hypothesis.given(case=operation.as_strategy())
            @hypothesis.settings(max_examples=8, deadline=None, database=None, derandomize=True,
                                 phases=[Phase.explicit, Phase.generate],
                                 suppress_health_check=list(HealthCheck))
            def check(case):
                response = case.call(base_url=base, headers=headers, timeout=20)
                case.validate_response(response, checks=checks)

            try:
                check()
            except Exception as exc:  # noqa: BLE001 - collect every operation's failure, then fail once
                failures.append(f"{operation.label}: {exc}")
        assert seen == EXPECTED_OPERATIONS - NOT_FUZZED
        assert failures == []
