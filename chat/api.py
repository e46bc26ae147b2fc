"""The small JSON views the chat page needs (agents, threads, notifications panel).

Errors are ``{"error", "code", "message"}`` with a 4xx status, as everywhere on the site.
"""

from __future__ import annotations

from functools import wraps

from django.http import JsonResponse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.access import Caller
from agents.api.parsing import request_text_check
from agents.runtime.errors import MastraError
from agents.runtime.messages import new_id

from . import inbox_panel, selectors


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
def notifications_list(request, caller):
    thread_id = request.GET.get("threadId") or None
    return JsonResponse(selectors.notification_panel(caller=caller, thread_id=thread_id))


@require_POST
@signed_in
def notification_update(request, caller, record_id: str, action: str):
    if action not in inbox_panel.ACTIONS:
        return error(404, "unknown_action", f"unknown action {action!r} (read or dismiss)")
    changed = inbox_panel.panel_update(caller=caller, record_id=record_id, action=action)
    if not changed and not selectors.notification_ids_of(caller=caller, ids=[record_id]):
        return error(404, "notification_not_found", f"notification {record_id!r} not found")
    return JsonResponse({"id": record_id, "changed": changed})
