"""Agents: list, details, ``generate`` (JSON) and ``stream`` (SSE of chunks, ``[DONE]`` at the end)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema

from agents.connections import async_twin
from agents.model_choice import amodel_choice_check
from agents.registry import get_mastra
from agents.runtime.run.ending import RESOURCE_ID_KEY
from agents.runtime.tracing import CHANNEL_KEY
from agents.selectors import run_id_taken

from . import openapi
from .base import ApiView, json_response
from .errors import ApiError
from .parsing import execution_options, json_body, memory_option
from .serialization import agent_json, agents_with_draft
from .sse import run_events, sse_response


class AgentListView(ApiView):
    @extend_schema(operation_id="agents_list", responses=openapi.AGENT_MAP, tags=["agents"])
    async def get(self, request):
        agents = get_mastra().get_agents()
        drafts = await agents_with_draft(list(agents.values()))
        return json_response({agent_id: await agent_json(agent, with_id=True, has_draft=agent.id in drafts)
                              for agent_id, agent in agents.items()})


class AgentDetailView(ApiView):
    @extend_schema(operation_id="agents_detail", responses=openapi.AGENT, tags=["agents"])
    async def get(self, request, agent_id: str):
        return json_response(await agent_json(self.agent(agent_id), with_id=False))


async def run_arguments(view: ApiView, request, agent) -> tuple:
    """``(messages, options)`` of a generate or stream body; ``memory`` checked against the caller
    (its thread's owner, or the caller's own resource for a new thread), the model and connection
    options against ``agents.model_choice``."""
    body = json_body(request)
    if "messages" not in body:
        raise ApiError("messages is required (a string or a list)", code="invalid_messages")
    messages = body["messages"]
    if not isinstance(messages, (str, list)):
        raise ApiError("messages must be a string or a list", code="invalid_messages")
    options = execution_options(body)
    for name in ("resource_id", "thread_id"):  # Mastra's legacy top-level target
        options.pop(name, None)
    # the run belongs to the caller: only they (and staff) may approve, resume or read it later
    context = options.get("request_context")
    if context is not None and not isinstance(context, dict):
        raise ApiError("requestContext must be an object", code="invalid_field")
    options["request_context"] = {**(context or {}), RESOURCE_ID_KEY: view.caller.resource_id,
                                  CHANNEL_KEY: "api"}
    run_id = options.get("run_id")
    if isinstance(run_id, str) and run_id and await async_twin(run_id_taken)(run_id):
        raise ApiError("runId is already used by another run: leave it out or choose a new one",
                       code="run_id_taken")
    memory = body.get("memory")
    if memory is None and (body.get("threadId") or body.get("resourceId")):
        memory = {"thread": body.get("threadId"), "resource": body.get("resourceId")}
    if memory is not None:
        thread_id, resource_id, rest = memory_option(memory)
        if thread_id is not None:
            resource_id, thread_id = await view.caller.atarget(thread_id, resource_id)
            options["memory"] = {**rest, "thread": thread_id, "resource": resource_id}
        elif rest:
            options["memory"] = {**rest, "resource": view.caller.resource(resource_id)}
    await amodel_choice_check(options, agent=agent, user=request.user)
    return messages, options


class GenerateView(ApiView):
    @extend_schema(operation_id="agents_generate", request=openapi.EXECUTION_BODY, responses=openapi.GENERATE_RESULT,
                   tags=["agents"])
    async def post(self, request, agent_id: str):
        agent = self.agent(agent_id)
        messages, options = await run_arguments(self, request, agent)
        result = await agent.generate(messages, **options)
        return json_response(result.to_dict())


class StreamView(ApiView):
    @extend_schema(operation_id="agents_stream", request=openapi.EXECUTION_BODY, responses=openapi.SSE,
                   tags=["agents"])
    async def post(self, request, agent_id: str):
        agent = self.agent(agent_id)
        messages, options = await run_arguments(self, request, agent)
        output = await agent.stream(messages, **options)
        return sse_response(run_events(output.full_stream))


