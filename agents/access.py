"""Who may act as which resource, and see which thread: the one isolation selector.

HTTP views, SSE subscriptions, the websocket consumer and the chat page all ask here. The rules
(DESIGN §5):

- every signed-in user has a resource id of their own (:func:`resource_for_user`);
- a non-staff user acts only as that resource: the server fills it when the request omits it, and a
  request naming another resource is refused (:class:`AccessDenied`, 403);
- a thread is identified by (resource, thread id): a request reaches the thread of the resource it
  acts as, so another resource's thread of the same id is neither seen nor taken (no existence
  leak, no squatting);
- staff may act for any resource by naming it (``resourceId``); without it they act as their own;
- a run belongs to a resource (its thread's, or its HTTP caller's): only that resource and staff may
  act on it; another's run is the same 404 as an unknown one (:class:`RunNotFound`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.connections import async_twin
from agents.models import Run, Thread
from agents.runtime.errors import MastraError
from agents.runtime.ids import MAX_RESOURCE_ID, MAX_RUN_ID, MAX_THREAD_ID, id_check
from agents.runtime.threads.store import thread_key


class AccessDenied(MastraError):
    """The caller may not act as the resource it named (HTTP 403)."""

    code = "forbidden"


class ThreadNotFound(MastraError):
    """No thread by that id that the caller may see (HTTP 404)."""

    code = "thread_not_found"


class RunNotFound(MastraError):
    """No run by that id that the caller may act on (HTTP 404)."""

    code = "run_not_found"


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
        """The existing thread ``thread_id`` of the resource the caller acts as (:meth:`resource`),
        or None when that resource has no such thread (the caller may then create it). Threads are
        identified by (resource, thread id): another resource's thread of the same id is not looked
        at, so nothing here answers differently for it than for a free id."""
        id_check(thread_id, "threadId", MAX_THREAD_ID)
        resource = self.resource(requested_resource)
        return Thread.objects.filter(pk=thread_key(resource, thread_id), saved=True).first()

    def existing_thread(self, thread_id: str, requested_resource: str | None = None) -> Thread:
        """:meth:`thread`, with :class:`ThreadNotFound` when it does not exist."""
        thread = self.thread(thread_id, requested_resource)
        if thread is None:
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        return thread

    def target(self, thread_id: str, requested_resource: str | None = None) -> tuple[str, str]:
        """``(resource_id, thread_id)`` a request may write to: the thread ``thread_id`` of the
        resource the caller acts as, existing or not."""
        id_check(thread_id, "threadId", MAX_THREAD_ID)
        return self.resource(requested_resource), thread_id

    def visible_threads(self, resource_id: str | None = None):
        """The threads the caller may list, optionally of one resource (checked as :meth:`resource`)."""
        threads = Thread.objects.filter(saved=True)  # a row holding only persisted inputs is no thread yet
        if resource_id or not self.is_staff:
            threads = threads.filter(resource_id=self.resource(resource_id))
        return threads

    def run(self, run_id: str) -> Run:
        """The run ``run_id`` when the caller may act on it: its resource is the caller's (staff: any).
        An unknown run and another resource's run are the same :class:`RunNotFound` (404)."""
        id_check(run_id, "runId", MAX_RUN_ID)
        run = Run.objects.filter(pk=run_id).select_related("thread").first()
        if run is None or not (self.is_staff or (run.resource_id and run.resource_id == self.resource_id)):
            raise RunNotFound(f"run {run_id!r} not found")
        return run

    def run_thread(self, run_id: str) -> Thread | None:
        """The thread run ``run_id`` (:meth:`run`) answered in; None for a run without a thread."""
        run = self.run(run_id)
        return run.thread

    async def atarget(self, thread_id: str, requested_resource: str | None = None) -> tuple[str, str]:
        """:meth:`target` (no database read: no hop to the worker thread)."""
        return self.target(thread_id, requested_resource)

    athread = async_twin(thread)
    arun_thread = async_twin(run_thread)
    aexisting_thread = async_twin(existing_thread)
    arun = async_twin(run)
