"""Inputs into a thread: ``send-message``, ``queue-message``, ``signals``, ``state-signals`` and
``notifications``. Each answers once the input is stored (``{"accepted": true, "runId", "action",
"signal"}``), whatever the run that follows does."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema

from agents.model_choice import amodel_choice_check
from agents.runtime.naming import camel_keys
from agents.runtime.tracing import if_idle_with_channel

from . import openapi
from .base import ApiView, json_response
from .errors import ApiError
from .parsing import execution_options, json_body, optional_dict
from .targets import input_target, thread_target
from .throttling import SEND_SCOPE, SendRateThrottle


async def branches(body: dict, *, agent, user) -> dict:
    """``if_active`` / ``if_idle`` of a body; the idle branch's stream options as generate options
    without ``memory`` (the input's thread is the run's memory), checked by ``agents.model_choice``
    for ``user`` on ``agent``."""
    if_idle = optional_dict(body, "ifIdle")
    if if_idle is not None and "streamOptions" in if_idle:
        stream = if_idle["streamOptions"]
        if stream is not None and not isinstance(stream, dict):
            raise ApiError("ifIdle.streamOptions must be an object", code="invalid_stream_options")
        options = execution_options(stream or {})
        options.pop("memory", None)
        await amodel_choice_check(options, agent=agent, user=user, prefix="ifIdle.streamOptions.")
        if_idle = {**if_idle, "streamOptions": options}
    # a run the input starts was started through the API (the cost ledger's channel)
    return {"if_active": optional_dict(body, "ifActive"), "if_idle": if_idle_with_channel(if_idle, "api")}


class SendView(ApiView):
    """The input routes: ``field`` names the body key of the input, ``method`` the agent method."""

    throttle_classes = [SendRateThrottle]
    throttle_scope = SEND_SCOPE
    field = "message"
    method = "send_message"

    async def accept(self, request, agent_id: str):
        agent = self.agent(agent_id)
        body = json_body(request)
        if body.get(self.field) is None:
            raise ApiError(f"{self.field} is required", code=f"missing_{self.field}")
        if_branches = await branches(body, agent=agent, user=request.user)
        target = await input_target(self.caller, body)
        result = await getattr(agent, self.method)(body[self.field], **target, **if_branches)
        return json_response(result.to_dict())


class SendMessageView(SendView):
    @extend_schema(operation_id="agents_send_message", request=openapi.MESSAGE_BODY, responses=openapi.ACCEPTED,
                   tags=["signals"])
    async def post(self, request, agent_id: str):
        return await self.accept(request, agent_id)


class QueueMessageView(SendView):
    method = "queue_message"

    @extend_schema(operation_id="agents_queue_message", request=openapi.MESSAGE_BODY, responses=openapi.ACCEPTED,
                   tags=["signals"])
    async def post(self, request, agent_id: str):
        return await self.accept(request, agent_id)


class SignalView(SendView):
    field, method = "signal", "send_signal"

    @extend_schema(operation_id="agents_send_signal", request=openapi.SIGNAL_BODY, responses=openapi.ACCEPTED,
                   tags=["signals"])
    async def post(self, request, agent_id: str):
        return await self.accept(request, agent_id)


class StateSignalView(SendView):
    field, method = "state", "send_state_signal"

    @extend_schema(operation_id="agents_send_state_signal", request=openapi.STATE_BODY, responses=openapi.ACCEPTED,
                   tags=["signals"])
    async def post(self, request, agent_id: str):
        return await self.accept(request, agent_id)


class NotificationSignalView(ApiView):
    throttle_classes = [SendRateThrottle]
    throttle_scope = SEND_SCOPE

    @extend_schema(operation_id="agents_send_notification", request=openapi.NOTIFICATION_BODY,
                   responses=openapi.NOTIFICATION_RESULT, tags=["signals"])
    async def post(self, request, agent_id: str):
        agent = self.agent(agent_id)
        body = json_body(request)
        notification = body.get("notification")
        if notification is None:
            raise ApiError("notification is required", code="missing_notification")
        if_idle = (await branches(body, agent=agent, user=request.user))["if_idle"]
        resource_id, thread_id = await thread_target(self.caller, body)
        result = await agent.send_notification_signal(notification, resource_id=resource_id, thread_id=thread_id,
                                                      if_idle=if_idle)
        if isinstance(result, list):
            return json_response({"results": [notification_wire(r) for r in result]})
        return json_response(notification_wire(result))


def notification_wire(result) -> dict:
    """A notification's result on the wire: its record's keys in camelCase, as every API body."""
    out = result.to_dict()
    out["record"] = camel_keys(out["record"])
    return out
