"""The OpenAPI description of the routes (drf-spectacular): request bodies and responses as raw
JSON Schemas, every error as :data:`ERROR`."""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerView
from rest_framework import exceptions as drf


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """``Authorization: Bearer <token>`` in the schema (DRF's ``Token <token>`` is ``tokenAuth``)."""

    target_class = "agents.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer"}


class SessionCookieScheme(OpenApiAuthenticationExtension):
    """The admin's session cookie (``sessionid``), as DRF's session authentication is described."""

    target_class = "agents.api.auth.SessionCookieAuthentication"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema):
        from django.conf import settings

        return {"type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME}


class ApiDocsView(SpectacularSwaggerView):
    """Swagger UI at ``/api/docs/`` (its files served by the site, ``drf-spectacular-sidecar``),
    for signed-in users only: an anonymous browser is sent to the login page (``LOGIN_URL``, with
    ``next``) and comes back signed in; the page then reads ``/api/schema/`` with the session. The
    site's ``Cross-Origin-Opener-Policy`` applies (drf-spectacular opens it up to ``unsafe-none``
    for OAuth2 pop-ups, which this API does not use)."""

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        del response["Cross-Origin-Opener-Policy"]
        return response

    def handle_exception(self, exc):
        if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)


def body(schema: dict) -> dict:
    return {"application/json": schema}

OBJECT = {"type": "object", "additionalProperties": True}
ERROR = {"type": "object", "required": ["error", "code", "message"],
         "properties": {"error": {"type": "string"}, "code": {"type": "string"}, "message": {"type": "string"}}}
ERRORS = {status: ERROR for status in (400, 401, 403, 404, 405, 409, 413, 415, 429)}


def ok(schema: dict, status: int = 200) -> dict:
    return {status: schema, **ERRORS}


STRING = {"type": "string"}
NULLABLE_STRING = {"type": "string", "nullable": True}
AGENT_FIELDS = {"name": STRING, "description": STRING, "instructions": STRING,
                "tools": {"type": "object", "additionalProperties": OBJECT}, "provider": STRING, "modelId": STRING}
AGENT = ok({"type": "object", "required": ["name", "instructions", "tools"], "properties": AGENT_FIELDS})
AGENT_MAP = ok({"type": "object", "additionalProperties": {
    "type": "object", "required": ["id", "name", "tools"], "properties": {"id": STRING, **AGENT_FIELDS}}})

MESSAGES = {"oneOf": [STRING, {"type": "array", "items": {}}]}
MEMORY = {"type": "object", "properties": {"thread": {"oneOf": [STRING, OBJECT]}, "resource": STRING,
                                           "options": OBJECT}}
EXECUTION_BODY = body({"type": "object", "required": ["messages"], "properties": {
    "messages": MESSAGES, "memory": MEMORY, "maxSteps": {"type": "integer", "minimum": 1}, "instructions": {},
    "system": {}, "context": {"type": "array", "items": OBJECT}, "modelSettings": OBJECT, "toolChoice": {},
    "activeTools": {"type": "array", "items": STRING}, "requireToolApproval": {"type": "boolean"},
    "structuredOutput": OBJECT, "providerOptions": OBJECT, "runId": STRING, "requestContext": OBJECT,
    "clientTools": OBJECT}})
GENERATE_RESULT = ok({"type": "object", "required": ["runId", "text", "finishReason", "usage", "steps"], "properties": {
    "runId": STRING, "text": STRING, "finishReason": STRING, "usage": OBJECT, "steps": {"type": "array"},
    "toolCalls": {"type": "array"}, "toolResults": {"type": "array"}, "response": OBJECT}})
#: an SSE stream: every event a `data:` line with a chunk's JSON (schemathesis reads events this way)
SSE = {(200, "text/event-stream"): {"type": "object", "properties": {"data": STRING}}, **ERRORS}

TARGET = {"resourceId": STRING, "threadId": STRING, "runId": STRING,
          "ifActive": {"type": "object", "properties": {"behavior": {"enum": ["deliver", "persist", "discard"]},
                                                        "attributes": OBJECT}},
          "ifIdle": {"type": "object", "properties": {"behavior": {"enum": ["wake", "persist", "discard"]},
                                                      "attributes": OBJECT, "streamOptions": OBJECT}}}
MESSAGE_BODY = body({"type": "object", "required": ["message"], "properties": {
    "message": {"oneOf": [STRING, {"type": "array", "items": {}}, OBJECT]}, **TARGET}})
SIGNAL_BODY = body({"type": "object", "required": ["signal"], "properties": {"signal": OBJECT, **TARGET}})
STATE_BODY = body({"type": "object", "required": ["state"], "properties": {"state": OBJECT, **TARGET}})
NOTIFICATION_BODY = body({"type": "object", "required": ["notification", "threadId"], "properties": {
    "notification": {"oneOf": [OBJECT, {"type": "array", "items": OBJECT}]}, "resourceId": STRING,
    "threadId": STRING, "ifIdle": OBJECT}})
ACCEPTED = ok({"type": "object", "required": ["accepted"], "properties": {
    "accepted": {"type": "boolean"}, "runId": NULLABLE_STRING, "action": NULLABLE_STRING,
    "signal": {"type": "object", "nullable": True}, "skipped": {"type": "boolean"}, "reason": STRING}})
NOTIFICATION_RESULT = ok({"type": "object", "properties": {
    "record": OBJECT, "decision": OBJECT, "results": {"type": "array", "items": OBJECT}}})

THREAD_BODY = body({"type": "object", "required": ["threadId"], "properties": {
    "resourceId": STRING, "threadId": STRING, "lastSeq": {"type": "integer", "minimum": 0}}})
ABORT_BODY = body({"type": "object", "required": ["threadId"], "properties": {
    "resourceId": STRING, "threadId": STRING, "expectedRunId": STRING}})
ABORTED = ok({"type": "object", "required": ["aborted"], "properties": {"aborted": {"type": "boolean"}}})
QUEUE = ok({"type": "object", "required": ["queued"], "properties": {"queued": {"type": "array", "items": OBJECT}}})
QUEUE_CANCEL_BODY = body({"type": "object", "required": ["threadId", "ids"], "properties": {
    "resourceId": STRING, "threadId": STRING, "ids": {"type": "array", "items": STRING}}})
CANCELLED = ok({"type": "object", "required": ["cancelled"], "properties": {"cancelled": {"type": "integer"}}})

TOOL_APPROVAL_BODY = body({"type": "object", "required": ["threadId", "toolCallId", "approved"], "properties": {
    "resourceId": STRING, "threadId": STRING, "toolCallId": STRING, "approved": {"type": "boolean"},
    "runId": STRING}})
TOOL_APPROVAL_ACCEPTED = ok({"type": "object", "required": ["accepted", "runId"], "properties": {
    "accepted": {"type": "boolean"}, "runId": STRING, "toolCallId": STRING}})
TOOL_CALL_BODY = body({"type": "object", "required": ["runId", "toolCallId"], "properties": {
    "runId": STRING, "toolCallId": STRING, "requestContext": OBJECT, "reason": STRING}})

THREAD = {"type": "object", "required": ["id", "resourceId"], "properties": {
    "id": STRING, "resourceId": STRING, "title": STRING, "metadata": {"type": "object", "nullable": True},
    "createdAt": STRING, "updatedAt": STRING}}
PAGE = {"total": {"type": "integer"}, "page": {"type": "integer"}, "perPage": {"type": "integer"},
        "hasMore": {"type": "boolean"}}
THREAD_PAGE = ok({"type": "object", "required": ["threads", "total", "page", "perPage", "hasMore"], "properties": {
    "threads": {"type": "array", "items": THREAD}, **PAGE}})
THREAD_OK = ok(THREAD)
THREAD_CREATE_BODY = body({"type": "object", "properties": {
    "threadId": STRING, "resourceId": STRING, "title": STRING, "metadata": OBJECT}})
THREAD_UPDATE_BODY = body({"type": "object", "properties": {"title": STRING, "metadata": OBJECT, "resourceId": STRING}})
DELETED = ok({"type": "object", "required": ["result"], "properties": {"result": STRING}})
#: a stored message, Mastra's ``MastraDBMessage`` (``agents.runtime.stored_messages``)
STORED_MESSAGE = {"type": "object", "required": ["id", "role", "content", "createdAt", "threadId", "resourceId"],
                  "properties": {
    "id": STRING, "role": {"enum": ["user", "assistant", "system", "signal"]}, "type": STRING, "createdAt": STRING,
    "threadId": STRING, "resourceId": STRING,
    "content": {"type": "object", "required": ["format", "parts"], "properties": {
        "format": {"enum": [2]}, "parts": {"type": "array", "items": OBJECT}, "content": STRING,
        "metadata": OBJECT, "providerMetadata": OBJECT}}}}
MESSAGE_PAGE = ok({"type": "object", "required": ["messages", "total", "page", "perPage", "hasMore"], "properties": {
    "messages": {"type": "array", "items": STORED_MESSAGE}, **PAGE}})

NOTIFICATION_PAGE = ok({"type": "object", "required": ["notifications", "total"], "properties": {
    "notifications": {"type": "array", "items": OBJECT}, **PAGE}})
NOTIFICATION_UPDATE_BODY = body({"type": "object", "required": ["status"], "properties": {
    "status": {"enum": ["seen", "dismissed", "archived"]}}})
NOTIFICATION_OK = ok(OBJECT)


def agent_ids_hook(result, generator, request, public):
    """drf-spectacular post-processing: ``agent_id`` path parameters list the registered agents."""
    from agents.registry import get_mastra

    ids = sorted(get_mastra().get_agents())
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter.get("name") == "agent_id":
                    parameter["schema"] = {"type": "string", "enum": ids}
    return result

# -- voice (agents.api.voice) --
SPEAKERS = ok({"type": "array", "items": {"type": "object", "required": ["voiceId"],
                                          "properties": {"voiceId": STRING}, "additionalProperties": True}})
LISTENER = ok({"type": "object", "required": ["enabled"], "properties": {"enabled": {"type": "boolean"}}})
SPEAK_BODY = body({"type": "object", "required": ["text"], "properties": {
    "text": STRING, "speakerId": STRING, "options": OBJECT}})
AUDIO = {**{(200, kind): {"type": "string", "format": "binary"}
            for kind in ("audio/mpeg", "audio/wav", "audio/ogg", "audio/aac", "audio/flac", "audio/pcm")},
         502: ERROR, **ERRORS}
AUDIO_UPLOAD = {"multipart/form-data": {"type": "object", "required": ["audio"], "properties": {
    "audio": {"type": "string", "format": "binary"}, "options": STRING}},
    "audio/*": {"type": "string", "format": "binary"}}
TRANSCRIPT = {**ok({"type": "object", "required": ["text"], "properties": {"text": STRING}}), 502: ERROR}
