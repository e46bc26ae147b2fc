"""A thread's stream and run: ``threads/subscribe`` (SSE that stays open across runs, resumable with
``lastSeq`` or ``Last-Event-ID``), ``threads/abort`` and the queue of waiting inputs."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from . import openapi
from .base import ApiView, json_response
from .errors import ApiError
from .parsing import json_body, optional_int
from .sse import CONNECTED, KEEP_ALIVE, keepalive_interval, sse_event, sse_response
from .targets import thread_target


def resume_after(request, body: dict) -> int | None:
    """The ``seq`` to resume after: ``lastSeq`` in the body, else the ``Last-Event-ID`` header."""
    last_seq = optional_int(body, "lastSeq")
    if last_seq is None:
        last_seq = optional_int({"Last-Event-ID": request.META.get("HTTP_LAST_EVENT_ID")}, "Last-Event-ID")
    return last_seq


async def subscription_events(subscription):
    """``: connected`` at once (the client waits for the headers before it sends anything), then the
    thread's chunks (those that arrived together in one write, each its own event), a keep-alive
    after every ``keepalive_interval()`` of silence; the subscription ends with the connection."""
    try:
        yield CONNECTED
        interval = keepalive_interval()
        while (chunks := await subscription.read(interval)) is not None:
            yield b"".join(sse_event(c) for c in chunks) if chunks else KEEP_ALIVE
    finally:
        subscription.unsubscribe()


class SubscribeView(ApiView):
    @extend_schema(operation_id="agents_threads_subscribe", request=openapi.THREAD_BODY, responses=openapi.SSE,
                   tags=["threads"])
    async def post(self, request, agent_id: str):
        agent = self.agent(agent_id)
        body = json_body(request)
        resource_id, thread_id = await thread_target(self.caller, body)
        after_seq = resume_after(request, body)
        subscription = await agent.subscribe_to_thread(resource_id=resource_id, thread_id=thread_id,
                                                       after_seq=after_seq)
        return sse_response(subscription_events(subscription))


class AbortView(ApiView):
    @extend_schema(operation_id="agents_threads_abort", request=openapi.ABORT_BODY, responses=openapi.ABORTED,
                   tags=["threads"])
    async def post(self, request, agent_id: str):
        agent = self.agent(agent_id)
        resource_id, thread_id = await thread_target(self.caller, json_body(request))
        return json_response({"aborted": await agent.abort_thread(resource_id=resource_id, thread_id=thread_id)})


THREAD_QUERY = [OpenApiParameter("threadId", str, required=True), OpenApiParameter("resourceId", str)]


class QueueView(ApiView):
    @extend_schema(operation_id="agents_threads_queue", parameters=THREAD_QUERY, responses=openapi.QUEUE,
                   tags=["threads"])
    async def get(self, request, agent_id: str):
        agent = self.agent(agent_id)
        resource_id, thread_id = await thread_target(self.caller, request.GET.dict())
        return json_response({"queued": await agent.list_queued_inputs(resource_id=resource_id, thread_id=thread_id)})


class QueueCancelView(ApiView):
    @extend_schema(operation_id="agents_threads_queue_cancel", request=openapi.QUEUE_CANCEL_BODY,
                   responses=openapi.CANCELLED, tags=["threads"])
    async def post(self, request, agent_id: str):
        agent = self.agent(agent_id)
        body = json_body(request)
        ids = body.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ApiError("ids must be a list of input ids", code="invalid_ids")
        resource_id, thread_id = await thread_target(self.caller, body)
        # only this thread's waiting inputs (the runtime scopes the call to the thread)
        cancelled = await agent.cancel_queued_inputs(ids, resource_id=resource_id, thread_id=thread_id)
        return json_response({"cancelled": cancelled})
