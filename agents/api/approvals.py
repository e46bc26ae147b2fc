"""Tool approvals: ``approve-tool-call`` / ``decline-tool-call`` (SSE of the continued run), their
``-generate`` twins (JSON result) and ``send-tool-approval`` (JSON acknowledgement; the continued
run's chunks reach the thread's subscribers)."""

from __future__ import annotations

import asyncio
from drf_spectacular.utils import extend_schema

from agents.connections import async_twin
from agents.access import RunNotFound
from agents.runtime.threads.store import thread_key
from agents.runtime.errors import ToolApprovalError
from agents.selectors import pending_approval_run

from . import openapi
from .base import ApiView, json_response
from .errors import ApiError
from .parsing import json_body, optional_dict, optional_str, required_str
from .sse import run_events, sse_response
from .targets import thread_target

#: continuations started by ``send-tool-approval``, held until they end (nobody awaits them)
continuations: set[asyncio.Task] = set()


async def run_owned(caller, run_id: str):
    """The run ``run_id`` when the caller owns it (``Caller.run``); ``approval_not_found`` for an
    unknown run and for another resource's alike."""
    try:
        return await caller.arun(run_id)
    except RunNotFound:
        raise ToolApprovalError(f"no run is waiting for approval under run id {run_id!r}",
                                code="approval_not_found") from None


async def tool_call(view: ApiView, request) -> tuple[str, str, dict]:
    """``(run_id, tool_call_id, options)`` of a body, the run checked against the caller: a run of
    another resource is refused as an unknown one (``approval_not_found``)."""
    body = json_body(request)
    run_id = required_str(body, "runId")
    tool_call_id = required_str(body, "toolCallId")
    await run_owned(view.caller, run_id)
    options = {}
    context = optional_dict(body, "requestContext")
    if context:
        options["request_context"] = context
    return run_id, tool_call_id, options


class DecisionView(ApiView):
    """One decision route: ``method`` is the agent method, ``stream`` whether it answers with SSE."""

    method = "approve_tool_call"
    stream = True

    async def decide(self, request, agent_id: str):
        agent = self.agent(agent_id)
        run_id, tool_call_id, options = await tool_call(self, request)
        outcome = await getattr(agent, self.method)(run_id=run_id, tool_call_id=tool_call_id, **options)
        if self.stream:
            return sse_response(run_events(outcome.full_stream))
        return json_response(outcome.to_dict())


class ApproveToolCallView(DecisionView):
    @extend_schema(operation_id="agents_approve_tool_call", request=openapi.TOOL_CALL_BODY, responses=openapi.SSE,
                   tags=["approvals"])
    async def post(self, request, agent_id: str):
        return await self.decide(request, agent_id)


class DeclineToolCallView(DecisionView):
    method = "decline_tool_call"

    @extend_schema(operation_id="agents_decline_tool_call", request=openapi.TOOL_CALL_BODY, responses=openapi.SSE,
                   tags=["approvals"])
    async def post(self, request, agent_id: str):
        return await self.decide(request, agent_id)


class ApproveToolCallGenerateView(DecisionView):
    method, stream = "approve_tool_call_generate", False

    @extend_schema(operation_id="agents_approve_tool_call_generate", request=openapi.TOOL_CALL_BODY,
                   responses=openapi.GENERATE_RESULT, tags=["approvals"])
    async def post(self, request, agent_id: str):
        return await self.decide(request, agent_id)


class DeclineToolCallGenerateView(DecisionView):
    method, stream = "decline_tool_call_generate", False

    @extend_schema(operation_id="agents_decline_tool_call_generate", request=openapi.TOOL_CALL_BODY,
                   responses=openapi.GENERATE_RESULT, tags=["approvals"])
    async def post(self, request, agent_id: str):
        return await self.decide(request, agent_id)


class SendToolApprovalView(ApiView):
    @extend_schema(operation_id="agents_send_tool_approval", request=openapi.TOOL_APPROVAL_BODY,
                   responses=openapi.TOOL_APPROVAL_ACCEPTED, tags=["approvals"])
    async def post(self, request, agent_id: str):
        agent = self.agent(agent_id)
        body = json_body(request)
        tool_call_id = required_str(body, "toolCallId")
        approved = body.get("approved")
        if not isinstance(approved, bool):
            raise ApiError("approved must be true or false", code="invalid_field")
        resource_id, thread_id = await thread_target(self.caller, body)
        run_id = optional_str(body, "runId")
        if run_id is None:
            run_id = await async_twin(pending_approval_run)(key=thread_key(resource_id, thread_id),
                                                               tool_call_id=tool_call_id)
            if run_id is None:
                raise ToolApprovalError(f"no tool call {tool_call_id!r} waits for approval in thread {thread_id!r}",
                                        code="approval_not_found")
        # scoped to the caller's thread: a run of another thread is refused as an unknown one
        method = agent.approve_tool_call if approved else agent.decline_tool_call
        output = await method(run_id=run_id, tool_call_id=tool_call_id, resource_id=resource_id, thread_id=thread_id)
        task = asyncio.ensure_future(output.consume_stream())
        continuations.add(task)
        task.add_done_callback(continuations.discard)
        return json_response({"accepted": True, "runId": run_id, "toolCallId": tool_call_id})
