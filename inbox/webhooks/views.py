"""``POST /api/webhooks/github/<name>`` and ``/api/webhooks/slack/<name>``: signature first (401,
nothing stored), then the sender's id (GitHub's ``X-GitHub-Delivery``, the ``event_id`` of a Slack
event: 400 without it), then once per delivery id and once per event (a redelivery, or a replay of
the signed body under another delivery id or event name, answers 200 ``duplicate`` and stores
nothing), then the notification (200) or the reason it was ignored (202, logged)."""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny

from agents.api import openapi
from agents.api.base import ApiView, json_response
from agents.api.errors import ApiError, error_response
from agents.api.parsing import json_object, raw_body
from agents.runtime.errors import MastraError

from . import github, slack
from .services import (webhook_delivery_claim, webhook_delivery_finish, webhook_delivery_release,
                       webhook_endpoint_get, webhook_notify)

logger = logging.getLogger(__name__)


class EndpointNotFound(MastraError):
    code = "endpoint_not_found"


class WebhookView(ApiView):
    """The common steps; ``source`` and :meth:`verify` / :meth:`event` are the sender's."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    source = ""

    async def receive(self, request, name: str):
        endpoint = await sync_to_async(webhook_endpoint_get)(source=self.source, name=name)
        if endpoint is None:
            raise EndpointNotFound(f"no {self.source} webhook endpoint {name!r}")
        raw = raw_body(request)
        problem = self.verify(endpoint, request, raw)
        if problem is not None:
            logger.warning("%s webhook %s refused: %s", self.source, name, problem)
            return error_response("invalid_signature", problem, status=401)
        event = self.event(endpoint, request, json_object(raw))
        if event.reply is not None and event.notification is None:
            return json_response(event.reply)
        # the view's subclass refused a request without the sender's id, so an event with a
        # notification always has a key (and is recorded)
        recorded = bool(event.event_key)
        if recorded and not await sync_to_async(webhook_delivery_claim)(
                endpoint=endpoint, delivery_id=event.delivery_id, event_key=event.event_key, event=event.event):
            logger.info("%s webhook %s: delivery %s (%s) is a duplicate", self.source, name, event.delivery_id,
                        event.event_key)
            return json_response({"ok": True, "status": "duplicate", "deliveryId": event.delivery_id})
        if event.notification is None:
            logger.info("%s webhook %s ignored %s: %s", self.source, name, event.event, event.ignored)
            if recorded:
                await sync_to_async(webhook_delivery_finish)(endpoint=endpoint, delivery_id=event.delivery_id,
                                                             outcome="ignored")
            return json_response({"ok": True, "status": "ignored", "reason": event.ignored}, status=202)
        try:
            stored = await webhook_notify(endpoint, event)
        except BaseException:
            if recorded:
                await sync_to_async(webhook_delivery_release)(endpoint=endpoint, delivery_id=event.delivery_id)
            raise
        if recorded:
            await sync_to_async(webhook_delivery_finish)(endpoint=endpoint, delivery_id=event.delivery_id,
                                                         outcome="stored", record_ids=[stored["recordId"]])
        return json_response({"ok": True, "status": "stored", **stored})


WEBHOOK_BODY = openapi.body(openapi.OBJECT)
WEBHOOK_REPLY = {200: openapi.OBJECT, 202: openapi.OBJECT, **openapi.ERRORS}


class GitHubWebhookView(WebhookView):
    source = "github"

    def verify(self, endpoint, request, raw: bytes) -> str | None:
        if github.signature_valid(endpoint.secret, raw, request.META.get("HTTP_X_HUB_SIGNATURE_256")):
            return None
        return "the X-Hub-Signature-256 signature does not match"

    def event(self, endpoint, request, payload: dict):
        name = request.META.get("HTTP_X_GITHUB_EVENT") or ""
        if not name:
            raise ApiError("X-GitHub-Event is missing", code="missing_event")
        delivery_id = (request.META.get("HTTP_X_GITHUB_DELIVERY") or "").strip()
        if not delivery_id:
            raise ApiError("X-GitHub-Delivery is missing", code="missing_delivery_id")
        return github.github_event(name, payload, delivery_id, mention_name=endpoint.mention_name)

    @extend_schema(operation_id="webhooks_github", request=WEBHOOK_BODY, responses=WEBHOOK_REPLY, tags=["webhooks"],
                   auth=[])
    async def post(self, request, name: str):
        return await self.receive(request, name)


class SlackWebhookView(WebhookView):
    source = "slack"

    def verify(self, endpoint, request, raw: bytes) -> str | None:
        return slack.verifier.problem(endpoint.secret, raw, request.META.get("HTTP_X_SLACK_REQUEST_TIMESTAMP"),
                                      request.META.get("HTTP_X_SLACK_SIGNATURE"))

    def event(self, endpoint, request, payload: dict):
        if payload.get("type") == "event_callback" and not payload.get("event_id"):
            raise ApiError("an event_callback without an event_id", code="missing_event_id")
        return slack.slack_event(payload)

    @extend_schema(operation_id="webhooks_slack", request=WEBHOOK_BODY, responses=WEBHOOK_REPLY, tags=["webhooks"],
                   auth=[])
    async def post(self, request, name: str):
        return await self.receive(request, name)
