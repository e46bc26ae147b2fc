"""The notification inbox over HTTP (``/api/notifications``, routes in :mod:`inbox.urls`): list a user's records (filters: status, source, priority,
thread) and file one (``seen``, ``dismissed``, ``archived``), through ``inbox``'s selectors and
services."""

from __future__ import annotations
from drf_spectacular.utils import OpenApiParameter, extend_schema

from agents.connections import async_twin
from agents.api import openapi
from agents.api.base import ApiView, json_response
from agents.api.errors import ApiError
from agents.api.parsing import json_body, optional_int, optional_str
from agents.runtime.errors import MastraError
from agents.runtime.naming import camel_keys
from agents.runtime.notifications.delivery import record_json

from .selectors import notification_get, notification_list
from .services import notification_archive, notification_dismiss, notification_mark_seen

STATUSES = ("pending", "delivered", "seen", "dismissed", "archived", "discarded", "failed")
PRIORITIES = ("low", "medium", "high", "urgent")
FILING = {"seen": notification_mark_seen, "dismissed": notification_dismiss, "archived": notification_archive}
LIST_QUERY = [OpenApiParameter("status", str, enum=STATUSES), OpenApiParameter("source", str),
              OpenApiParameter("priority", str, enum=PRIORITIES), OpenApiParameter("threadId", str),
              OpenApiParameter("resourceId", str), OpenApiParameter("page", int), OpenApiParameter("perPage", int)]


class NotificationNotFound(MastraError):
    code = "notification_not_found"


def record_wire(record: dict) -> dict:
    return camel_keys(record_json(record))


def choice(query: dict, name: str, choices: tuple) -> str | None:
    value = optional_str(query, name)
    if value is not None and value not in choices:
        raise ApiError(f"{name} must be one of {', '.join(choices)}", code="invalid_field")
    return value


class NotificationListView(ApiView):
    @extend_schema(operation_id="notifications_list", parameters=LIST_QUERY, responses=openapi.NOTIFICATION_PAGE,
                   tags=["notifications"])
    async def get(self, request):
        query = request.GET.dict()
        status, priority = choice(query, "status", STATUSES), choice(query, "priority", PRIORITIES)
        source = optional_str(query, "source")
        page = optional_int(query, "page", minimum=0, maximum=1_000_000) or 0
        per_page = optional_int(query, "perPage", minimum=1, maximum=500) or 50
        thread_id, resource_id = optional_str(query, "threadId"), optional_str(query, "resourceId")

        def listing():
            resource = self.caller.resource(resource_id) if (resource_id or not self.caller.is_staff) else None
            if thread_id is not None:
                resource = self.caller.existing_thread(thread_id, resource_id).resource_id
            return notification_list(resource_id=resource, thread_id=thread_id, status=status, priority=priority,
                                      source=source, limit=per_page, offset=page * per_page)

        records, total = await async_twin(listing)()
        return json_response({"notifications": [record_wire(r) for r in records], "total": total, "page": page,
                              "perPage": per_page, "hasMore": (page + 1) * per_page < total})


class NotificationDetailView(ApiView):
    @extend_schema(operation_id="notifications_update", request=openapi.NOTIFICATION_UPDATE_BODY,
                   responses=openapi.NOTIFICATION_OK, tags=["notifications"])
    async def patch(self, request, record_id: str):
        body = json_body(request)
        status = optional_str(body, "status")
        if status not in FILING:
            raise ApiError(f"status must be one of {', '.join(FILING)}", code="invalid_field")

        def file():
            owner = None if self.caller.is_staff else self.caller.resource_id
            if notification_get(record_id=record_id, resource_id=owner) is None:
                raise NotificationNotFound(f"notification {record_id!r} not found")
            FILING[status](ids=[record_id])
            return notification_get(record_id=record_id)

        return json_response(record_wire(await async_twin(file)()))

