"""Schedules over HTTP: the ``/api/schedules`` routes ``@mastra/client-js`` calls (``listSchedules``,
``getSchedule``, ``createSchedule``, ``updateSchedule``, ``deleteSchedule``, ``runSchedule``,
``listScheduleTriggers``, ``pauseSchedule``, ``resumeSchedule``), with Mastra's shapes (camelCase).

Isolation (``selectors.visible_to``): a user sees and changes the schedules of their own resource
and the threadless ones they created; another's schedule is the same 404 as an unknown one. A
threaded schedule's thread must exist and be the caller's (staff: any resource's)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from agents.connections import async_twin
from agents.api import openapi
from agents.api.base import ApiView, json_response
from agents.api.errors import ApiError
from agents.api.parsing import json_body, optional_int, optional_str
from agents.api.throttling import SEND_SCOPE, SendRateThrottle
from agents.access import ThreadNotFound
from agents.registry import get_mastra
from agents.runtime.naming import snake_case
from agents.runtime.schedules import ScheduleFilter, ScheduleNotFound

from .selectors import schedule_get, schedules_list, visible_to

CREATE_FIELDS = ("id", "agentId", "workflowId", "cron", "timezone", "prompt", "name", "threadId", "resourceId",
                 "signalType", "tagName", "attributes", "ifActive", "ifIdle", "providerOptions", "metadata",
                 "inputData", "initialState", "requestContext", "status", "misfirePolicy", "misfireCap")
UPDATE_FIELDS = ("cron", "timezone", "status", "metadata", "prompt", "name", "signalType", "tagName", "attributes",
                 "ifActive", "ifIdle", "providerOptions", "inputData", "initialState", "requestContext", "resourceId",
                 "threadId", "misfirePolicy", "misfireCap")
LIST_QUERY = [OpenApiParameter(name, str) for name in ("agentId", "workflowId", "status", "threadId", "resourceId",
                                                       "name")]
TRIGGERS_QUERY = [OpenApiParameter(name, int) for name in ("limit", "fromActualFireAt", "toActualFireAt")]
SCHEDULE = openapi.ok({"type": "object", "required": ["id", "cron", "status", "nextFireAt"],
                       "properties": {"id": openapi.STRING, "cron": openapi.STRING, "status": openapi.STRING,
                                      "nextFireAt": {"type": "integer"}}})
SCHEDULES = openapi.ok({"type": "object", "required": ["schedules"],
                        "properties": {"schedules": {"type": "array", "items": openapi.OBJECT}}})
TRIGGERS = openapi.ok({"type": "object", "required": ["triggers"],
                       "properties": {"triggers": {"type": "array", "items": openapi.OBJECT}}})
RECEIPT = openapi.ok({"type": "object", "required": ["scheduleId", "claimId", "scheduledFireAt"], "properties": {
    "scheduleId": openapi.STRING, "claimId": openapi.STRING, "scheduledFireAt": {"type": "integer"}}})
MESSAGE = openapi.ok({"type": "object", "required": ["message"], "properties": {"message": openapi.STRING}})
BODY = openapi.body(openapi.OBJECT)


def fields_of(body: dict, allowed: tuple) -> dict:
    """The body's fields as ``mastra.schedules`` keywords; an unknown key is refused (Mastra's strict
    schema: ``Unrecognized key``)."""
    unknown = [key for key in body if key not in allowed]
    if unknown:
        raise ApiError(f'Unrecognized key: "{unknown[0]}"', code="invalid_request")
    return {snake_case(key): value for key, value in body.items()}


class ScheduleView(ApiView):
    """A view on the caller's visible schedules."""

    def visible(self):
        caller = self.caller
        return visible_to(resource_id=caller.resource_id, user_id=caller.user_id, is_staff=caller.is_staff)

    async def schedule(self, schedule_id: str):
        """The schedule ``schedule_id`` (or ``agent_<slug>``) if the caller may see it, else 404."""
        found = await async_twin(schedule_get)(schedule_id=schedule_id, visible=self.visible())
        if found is None:
            existing = await get_mastra().schedules.get(schedule_id)
            if existing is not None:
                found = await async_twin(schedule_get)(schedule_id=existing.id, visible=self.visible())
        if found is None:
            raise ScheduleNotFound("Schedule not found")
        return found


class ScheduleListView(ScheduleView):
    @extend_schema(operation_id="schedules_list", parameters=LIST_QUERY, responses=SCHEDULES, tags=["schedules"])
    async def get(self, request):
        query = request.GET.dict()
        filter = ScheduleFilter(**{snake_case(name): optional_str(query, name) for name in
                                   ("agentId", "workflowId", "status", "threadId", "resourceId", "name")})
        found = await async_twin(schedules_list)(filter=filter, visible=self.visible())
        return json_response({"schedules": [schedule.to_dict() for schedule in found]})

    @extend_schema(operation_id="schedules_create", request=BODY, responses=SCHEDULE, tags=["schedules"])
    async def post(self, request):
        fields = fields_of(json_body(request), CREATE_FIELDS)
        if fields.get("thread_id") is not None:
            if not isinstance(fields["thread_id"], str) or not isinstance(fields.get("resource_id"), (str, type(None))):
                raise ApiError("threadId and resourceId must be strings", code="invalid_field")
            if fields.get("resource_id"):  # the thread must be the caller's (staff: any resource's)
                if await self.caller.athread(fields["thread_id"], fields["resource_id"]) is None:
                    raise ThreadNotFound(f"thread {fields['thread_id']!r} not found")
        elif fields.get("resource_id") is not None and fields.get("workflow_id") is not None:
            fields["resource_id"] = self.caller.resource(fields["resource_id"])
        created = await get_mastra().schedules.create(created_by=self.caller.user_id, **fields)
        return json_response(created.to_dict())


class ScheduleDetailView(ScheduleView):
    @extend_schema(operation_id="schedules_get", responses=SCHEDULE, tags=["schedules"])
    async def get(self, request, schedule_id: str):
        return json_response((await self.schedule(schedule_id)).to_dict())

    @extend_schema(operation_id="schedules_update", request=BODY, responses=SCHEDULE, tags=["schedules"])
    async def patch(self, request, schedule_id: str):
        fields = fields_of(json_body(request), UPDATE_FIELDS)
        schedule = await self.schedule(schedule_id)
        updated = await get_mastra().schedules.update(schedule.id, **fields)
        return json_response(updated.to_dict())

    @extend_schema(operation_id="schedules_delete", responses=MESSAGE, tags=["schedules"])
    async def delete(self, request, schedule_id: str):
        schedule = await self.schedule(schedule_id)
        await get_mastra().schedules.delete(schedule.id)
        return json_response({"message": "Schedule deleted"})


class SchedulePauseView(ScheduleView):
    @extend_schema(operation_id="schedules_pause", request=None, responses=SCHEDULE, tags=["schedules"])
    async def post(self, request, schedule_id: str):
        schedule = await self.schedule(schedule_id)
        return json_response((await get_mastra().schedules.pause(schedule.id)).to_dict())


class ScheduleResumeView(ScheduleView):
    @extend_schema(operation_id="schedules_resume", request=None, responses=SCHEDULE, tags=["schedules"])
    async def post(self, request, schedule_id: str):
        schedule = await self.schedule(schedule_id)
        return json_response((await get_mastra().schedules.resume(schedule.id)).to_dict())


class ScheduleRunView(ScheduleView):
    throttle_classes = [SendRateThrottle]
    throttle_scope = SEND_SCOPE

    @extend_schema(operation_id="schedules_run", request=None, responses=RECEIPT, tags=["schedules"])
    async def post(self, request, schedule_id: str):
        schedule = await self.schedule(schedule_id)
        return json_response((await get_mastra().schedules.run(schedule.id)).to_dict())


class ScheduleTriggersView(ScheduleView):
    @extend_schema(operation_id="schedules_triggers", parameters=TRIGGERS_QUERY, responses=TRIGGERS, tags=["schedules"])
    async def get(self, request, schedule_id: str):
        query = request.GET
        limit = optional_int(query, "limit", minimum=1, maximum=1000)
        start = optional_int(query, "fromActualFireAt")
        end = optional_int(query, "toActualFireAt")
        schedule = await self.schedule(schedule_id)
        found = await get_mastra().schedules.list_triggers(schedule.id, limit=limit, from_actual_fire_at=start,
                                                           to_actual_fire_at=end)
        return json_response({"triggers": [trigger.to_dict() for trigger in found]})
