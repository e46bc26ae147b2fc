"""Who may act as which resource, and see which thread: the one isolation selector.

HTTP views, SSE subscriptions, the websocket consumer and the chat page all ask here. The rules
(DESIGN §5):

- every signed-in user has a resource id of their own (:func:`resource_for_user`);
- a non-staff user acts only as that resource: the server fills it when the request omits it, and a
  request naming another resource is refused (:class:`AccessDenied`, 403);
- another user's thread does not exist for a non-staff user (:class:`ThreadNotFound`, 404: no
  existence leak);
- staff may act for any resource; a request naming a resource other than the one an existing
  thread belongs to is refused (403), as Mastra's server does.
"""

from __future__ import annotations

from dataclasses import dataclass

from channels.db import database_sync_to_async

from agents.models import Run, Thread
from agents.runtime.errors import MastraError
from agents.runtime.ids import MAX_RESOURCE_ID, MAX_THREAD_ID, id_check


class AccessDenied(MastraError):
    """The caller may not act as the resource it named (HTTP 403)."""

    code = "forbidden"


class ThreadNotFound(MastraError):
    """No thread by that id that the caller may see (HTTP 404)."""

    code = "thread_not_found"


def resource_for_user(user) -> str:
    """The resource id a signed-in user acts as: their username (unique, no control characters)."""
    return user.get_username()


@dataclass(frozen=True)
class Caller:
    """A signed-in user as the isolation rules see them."""

    resource_id: str
    is_staff: bool
    user_id: int | None = None

    @classmethod
    def of(cls, user) -> "Caller":
        return cls(resource_id=resource_for_user(user), is_staff=bool(user.is_staff), user_id=user.pk)

    def resource(self, requested: str | None) -> str:
        """The resource a request acts as: its own when ``requested`` is omitted; ``requested`` when
        it is the caller's own or the caller is staff; :class:`AccessDenied` otherwise."""
        if requested is None or requested == "":
            return self.resource_id
        id_check(requested, "resourceId", MAX_RESOURCE_ID)
        if requested == self.resource_id or self.is_staff:
            return requested
        raise AccessDenied("you may act only as your own resource", code="resource_forbidden")

    def may_see(self, thread: Thread) -> bool:
        return self.is_staff or thread.resource_id == self.resource_id

    def thread(self, thread_id: str, requested_resource: str | None = None) -> Thread | None:
        """The existing thread ``thread_id`` as this caller may use it, or None when it does not exist
        (the caller may then create it as :meth:`resource`). Another user's thread raises
        :class:`ThreadNotFound` for a non-staff caller; naming a resource other than the thread's
        raises :class:`AccessDenied`."""
        id_check(thread_id, "threadId", MAX_THREAD_ID)
        resource = self.resource(requested_resource)
        thread = Thread.objects.filter(pk=thread_id).first()
        if thread is None:
            return None
        if not self.may_see(thread):
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        if requested_resource and thread.resource_id != resource:
            raise AccessDenied(f"thread {thread_id!r} belongs to another resource", code="thread_resource_mismatch")
        return thread

    def existing_thread(self, thread_id: str, requested_resource: str | None = None) -> Thread:
        """:meth:`thread`, with :class:`ThreadNotFound` when it does not exist."""
        thread = self.thread(thread_id, requested_resource)
        if thread is None:
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        return thread

    def target(self, thread_id: str, requested_resource: str | None = None) -> tuple[str, str]:
        """``(resource_id, thread_id)`` a request may write to: an existing thread's own resource,
        or the resource the caller acts as for a thread that does not exist yet."""
        thread = self.thread(thread_id, requested_resource)
        if thread is not None:
            return thread.resource_id, thread.id
        return self.resource(requested_resource), thread_id

    def visible_threads(self, resource_id: str | None = None):
        """The threads the caller may list, optionally of one resource (checked as :meth:`resource`)."""
        threads = Thread.objects.all()
        if resource_id or not self.is_staff:
            threads = threads.filter(resource_id=self.resource(resource_id))
        return threads

    def run_thread(self, run_id: str) -> Thread | None:
        """The thread run ``run_id`` answered in, when the caller may see it; None for an unknown
        run or a run without a thread (its id is then the only key to it). Another user's run is
        :class:`ThreadNotFound` for a non-staff caller."""
        id_check(run_id, "runId", MAX_THREAD_ID)
        run = Run.objects.filter(pk=run_id).select_related("thread").first()
        if run is None or run.thread is None:
            return None
        if not self.may_see(run.thread):
            raise ThreadNotFound(f"run {run_id!r} not found")
        return run.thread

    athread = database_sync_to_async(thread)
    arun_thread = database_sync_to_async(run_thread)
    aexisting_thread = database_sync_to_async(existing_thread)
    atarget = database_sync_to_async(target)
