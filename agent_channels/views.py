"""``POST /api/agents/<agentId>/channels/<platform>/webhook``: one service call
(:func:`~agent_channels.receive.channel_webhook_receive`, which documents the steps and replies).
Authenticated by the platform's signature only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny

from agents.api import openapi
from agents.api.base import ApiView, json_response
from agents.api.parsing import raw_body

from .receive import channel_webhook_receive

REPLY = {200: openapi.OBJECT, **openapi.ERRORS}


class ChannelWebhookView(ApiView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []
    checks_need_database = False

    @extend_schema(operation_id="agents_channels_webhook", request=openapi.body(openapi.OBJECT), responses=REPLY,
                   tags=["channels"], auth=[])
    async def post(self, request, agent_id: str, platform: str):
        reply = await channel_webhook_receive(agent_id=agent_id, platform=platform, headers=request.headers,
                                              raw=raw_body(request))
        return json_response(reply.body, status=reply.status)
