"""Memory threads and their messages, with the envelopes ``@mastra/client-js`` expects
(``{threads, total, page, perPage, hasMore}``, ``{messages, ...}``). ``agentId`` in the query is
accepted (the client sends it) and checked; all agents here share one memory store."""

from __future__ import annotations

import uuid
from drf_spectacular.utils import OpenApiParameter, extend_schema

from agents.connections import async_twin
from agents.memory_threads import memory_messages_page, memory_thread_delete, memory_thread_save, memory_threads_page
from agents.registry import get_mastra

from . import openapi
from .base import ApiView, json_response
from .parsing import json_body, optional_dict, optional_int, optional_str, query_bool

#: the column of a thread's title
MAX_TITLE = 255
PAGE_QUERY = [OpenApiParameter("page", int), OpenApiParameter("perPage", int), OpenApiParameter("agentId", str)]
THREADS_QUERY = [OpenApiParameter("resourceId", str), *PAGE_QUERY]
MESSAGES_QUERY = [*PAGE_QUERY, OpenApiParameter("includeSystemReminders", bool)]


def paging(request, default_per_page: int) -> tuple[int, int]:
    page = optional_int(request.GET, "page", minimum=0, maximum=1_000_000) or 0
    per_page = optional_int(request.GET, "perPage", minimum=1, maximum=1000) or default_per_page
    return page, per_page


def check_agent(request) -> None:
    agent_id = request.GET.get("agentId")
    if agent_id:
        get_mastra().get_agent(agent_id)  # agent_not_found (404)


class ThreadListView(ApiView):
    @extend_schema(operation_id="memory_threads_list", parameters=THREADS_QUERY, responses=openapi.THREAD_PAGE,
                   tags=["memory"])
    async def get(self, request):
        check_agent(request)
        page, per_page = paging(request, 100)
        resource_id = optional_str(request.GET.dict(), "resourceId")

        def listing():
            return memory_threads_page(threads=self.caller.visible_threads(resource_id), page=page, per_page=per_page)

        return json_response(await async_twin(listing)())

    @extend_schema(operation_id="memory_threads_create", parameters=PAGE_QUERY[2:], request=openapi.THREAD_CREATE_BODY,
                   responses=openapi.THREAD_OK, tags=["memory"])
    async def post(self, request):
        check_agent(request)
        body = json_body(request)
        thread_id = optional_str(body, "threadId") or str(uuid.uuid4())
        title = optional_str(body, "title", max_length=MAX_TITLE)
        metadata = optional_dict(body, "metadata")
        resource_id, thread_id = await self.caller.atarget(thread_id, optional_str(body, "resourceId"))
        thread = await async_twin(memory_thread_save)(resource_id=resource_id, thread_id=thread_id,
                                                         title=title, metadata=metadata)
        return json_response(thread)


class ThreadDetailView(ApiView):
    @extend_schema(operation_id="memory_threads_get", parameters=PAGE_QUERY[2:], responses=openapi.THREAD_OK,
                   tags=["memory"])
    async def get(self, request, thread_id: str):
        check_agent(request)
        thread = await self.caller.aexisting_thread(thread_id, optional_str(request.GET.dict(), "resourceId"))
        return json_response(thread.to_dict())

    @extend_schema(operation_id="memory_threads_update", parameters=PAGE_QUERY[2:],
                   request=openapi.THREAD_UPDATE_BODY, responses=openapi.THREAD_OK, tags=["memory"])
    async def patch(self, request, thread_id: str):
        check_agent(request)
        body = json_body(request)
        title = optional_str(body, "title", max_length=MAX_TITLE)
        metadata = optional_dict(body, "metadata")
        thread = await self.caller.aexisting_thread(thread_id, optional_str(body, "resourceId"))
        saved = await async_twin(memory_thread_save)(resource_id=thread.resource_id, thread_id=thread.thread_id,
                                                        title=title, metadata=metadata)
        return json_response(saved)

    @extend_schema(operation_id="memory_threads_delete", parameters=PAGE_QUERY[2:], responses=openapi.DELETED,
                   tags=["memory"])
    async def delete(self, request, thread_id: str):
        check_agent(request)
        thread = await self.caller.aexisting_thread(thread_id, optional_str(request.GET.dict(), "resourceId"))
        await async_twin(memory_thread_delete)(thread=thread)
        return json_response({"result": "Thread deleted"})


class MessageListView(ApiView):
    @extend_schema(operation_id="memory_threads_messages", parameters=MESSAGES_QUERY, responses=openapi.MESSAGE_PAGE,
                   tags=["memory"])
    async def get(self, request, thread_id: str):
        check_agent(request)
        page, per_page = paging(request, 40)
        thread = await self.caller.aexisting_thread(thread_id, optional_str(request.GET.dict(), "resourceId"))
        listing = await async_twin(memory_messages_page)(
            thread=thread, page=page, per_page=per_page,
            include_system_reminders=query_bool(request, "includeSystemReminders"))
        return json_response({**listing, "uiMessages": None})
