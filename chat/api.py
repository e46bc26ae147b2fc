"""The small JSON views the chat page needs (agents, threads, notifications panel).

Errors are ``{"error", "code", "message"}`` with a 4xx status, as everywhere on the site.
"""

from __future__ import annotations

from functools import wraps

from django.http import JsonResponse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.access import Caller
from agents.api.errors import status_for
from agents.api.parsing import json_body, request_text_check
from agents.connections import async_twin
from agents.runtime.errors import MastraError
from agents.runtime.messages import new_id
from inbox.selectors import notification_get

from . import inbox_panel, selectors, thread_actions
from .snapshot import thread_messages_page
from .demo_notification import notification_send_test


def error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": message, "code": code, "message": message}, status=status)


def signed_in(view):
    """401 JSON (not a redirect to the login page) for an anonymous caller; 400 ``invalid_text``
    for a NUL character in the query or the URL (docs/security.md, "Bad input")."""
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return error(401, "not_authenticated", "sign in first")
        try:
            request_text_check(request, kwargs)
        except MastraError as exc:
            return error(400, exc.code, exc.message)
        return view(request, Caller.of(request.user), *args, **kwargs)
    return wrapper


@require_GET
@signed_in
def agents_list(request, caller):
    return JsonResponse({"agents": selectors.agent_list(), "voiceLimits": selectors.voice_limits()})


@require_http_methods(["GET", "POST"])
@signed_in
def threads(request, caller):
    """GET: the caller's threads (``?q=`` searches titles). POST: a fresh thread id; the thread's
    row is written by its first message, so an unused new thread leaves nothing behind."""
    if request.method == "POST":
        return JsonResponse({"id": new_id("thread_"), "title": ""}, status=201)
    query = request.GET.get("q", "")
    if len(query) > 200:
        return error(400, "invalid_query", "q is limited to 200 characters")
    return JsonResponse({"threads": selectors.thread_list(caller=caller, query=query)})


@require_GET
@signed_in
def messages(request, caller):
    """GET ``?threadId=T&before=M`` (staff: ``&resourceId=R``): the caller's thread's messages
    before message ``M`` (the newest without ``before``), oldest first, as many as a snapshot
    carries: ``{"messages", "hasEarlier"}`` (the page's "Show earlier messages"). A thread the
    caller has not got reads as empty; 404 ``message_not_found`` for a ``before`` it does not hold."""
    before = request.GET.get("before") or None
    try:
        resource_id, thread_id = caller.target(request.GET.get("threadId", ""), request.GET.get("resourceId") or None)
        page = thread_messages_page(resource_id=resource_id, thread_id=thread_id, before=before)
    except MastraError as exc:
        return error(status_for(exc.code), exc.code, exc.message)
    if page is None:
        return error(404, "message_not_found", f"the thread has no message {before!r}")
    return JsonResponse(page)


@require_http_methods(["PATCH", "DELETE"])
@signed_in
def thread_detail(request, caller, thread_id: str):
    """PATCH ``{"title"}``: rename one of the caller's threads (an empty title clears it). DELETE:
    delete it. 404 ``thread_not_found`` for a thread the caller does not have."""
    try:
        if request.method == "DELETE":
            if not thread_actions.thread_delete(caller=caller, thread_id=thread_id):
                return error(404, "thread_not_found", f"thread {thread_id!r} not found")
            return JsonResponse({"id": thread_id, "deleted": True})
        title = json_body(request).get("title")
        if not isinstance(title, str):
            return error(400, "invalid_field", "title must be a string")
        if len(title) > thread_actions.MAX_TITLE:
            return error(400, "invalid_field", f"title is limited to {thread_actions.MAX_TITLE} characters")
        renamed = thread_actions.thread_rename(caller=caller, thread_id=thread_id, title=title)
    except MastraError as exc:
        return error(status_for(exc.code), exc.code, exc.message)
    if renamed is None:
        return error(404, "thread_not_found", f"thread {thread_id!r} not found")
    return JsonResponse(renamed)


@require_GET
@signed_in
def runs(request, caller):
    """``?id=<runId>`` (repeated, at most 100): the figures of the caller's runs among them."""
    run_ids = request.GET.getlist("id")
    if len(run_ids) > selectors.RUNS_LIMIT:
        return error(400, "invalid_query", f"at most {selectors.RUNS_LIMIT} run ids")
    return JsonResponse({"runs": selectors.run_figures(caller=caller, run_ids=run_ids)})


@require_GET
@signed_in
def notifications_list(request, caller):
    thread_id = request.GET.get("threadId") or None
    return JsonResponse(selectors.notification_panel(caller=caller, thread_id=thread_id))


@require_POST
@signed_in
def notifications_read_all(request, caller):
    return JsonResponse({"changed": inbox_panel.panel_read_all(caller=caller)})


@require_POST
async def notification_test(request):
    """``{"agentId", "threadId"}``: file a test notification into the caller's thread (201 with the
    record as the panel shows it)."""
    user = await request.auser()
    if not user.is_authenticated:
        return error(401, "not_authenticated", "sign in first")
    caller = Caller.of(user)
    try:
        body = json_body(request)
        agent_id, thread_id = body.get("agentId"), body.get("threadId")
        if not isinstance(agent_id, str) or not agent_id or not isinstance(thread_id, str) or not thread_id:
            return error(400, "invalid_field", "agentId and threadId are required strings")
        record = await notification_send_test(caller=caller, agent_id=agent_id, thread_id=thread_id)
    except MastraError as exc:
        return error(status_for(exc.code), exc.code, exc.message)
    stored = await async_twin(notification_get)(record_id=record["id"], resource_id=caller.resource_id)
    return JsonResponse({"record": selectors.panel_record(stored)}, status=201)


@require_POST
@signed_in
def notification_update(request, caller, record_id: str, action: str):
    if action not in inbox_panel.ACTIONS:
        return error(404, "unknown_action", f"unknown action {action!r} (read or dismiss)")
    changed = inbox_panel.panel_update(caller=caller, record_id=record_id, action=action)
    if not changed and not selectors.notification_ids_of(caller=caller, ids=[record_id]):
        return error(404, "notification_not_found", f"notification {record_id!r} not found")
    return JsonResponse({"id": record_id, "changed": changed})
