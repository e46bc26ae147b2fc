"""``POST /api/webhooks/github/<name>`` and ``/api/webhooks/slack/<name>``: one service call
(:func:`~inbox.webhooks.receive.webhook_receive`, which documents the steps and their replies)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny

from agents.api import openapi
from agents.api.base import ApiView, json_response
from agents.api.errors import status_for
from agents.api.parsing import raw_body
from agents.runtime.errors import MastraError

from .receive import sender_delivery_id, webhook_receive
from .refusals import awebhook_refusal_note_by_name

WEBHOOK_BODY = openapi.body(openapi.OBJECT)
WEBHOOK_REPLY = {200: openapi.OBJECT, 202: openapi.OBJECT, **openapi.ERRORS}


class WebhookView(ApiView):
    """A sender's webhook endpoints (``source``); signed by the sender, not authenticated."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    source = ""

    async def receive(self, request, name: str):
        try:
            raw = raw_body(request)
        except MastraError as exc:  # a body too large: counted as the other refusals are
            await awebhook_refusal_note_by_name(source=self.source, name=name, code=exc.code,
                                                status=status_for(exc.code), reason=exc.message,
                                                delivery_id=sender_delivery_id(request.headers))
            raise
        reply = await webhook_receive(source=self.source, name=name, headers=request.headers, raw=raw)
        return json_response(reply.body, status=reply.status)


class GitHubWebhookView(WebhookView):
    source = "github"

    @extend_schema(operation_id="webhooks_github", request=WEBHOOK_BODY, responses=WEBHOOK_REPLY, tags=["webhooks"],
                   auth=[])
    async def post(self, request, name: str):
        return await self.receive(request, name)


class SlackWebhookView(WebhookView):
    source = "slack"

    @extend_schema(operation_id="webhooks_slack", request=WEBHOOK_BODY, responses=WEBHOOK_REPLY, tags=["webhooks"],
                   auth=[])
    async def post(self, request, name: str):
        return await self.receive(request, name)
