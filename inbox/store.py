"""``NotificationStore`` (``agents.runtime.notifications``) on the ORM.

Each method runs one service or selector (one transaction) on an executor thread
(``agents.connections.async_twin`` on ``POOL``): each call is self-contained (it holds no connection state between calls),
so notifications for different threads are stored in parallel, on the executor's threads and their
own database connections, instead of queueing behind every other ORM call of the process. The
store knows nothing of the dispatcher: records that fall due are delivered by the serving and worker
processes' background work (``mastra_site.workers``) or by Celery beat.

**Group commit.** Every ``ingest`` and ``update``: the calls of one event loop are queued, and everything that arrives while a
batch is in flight is written by the next batch — one worker-thread hop and one transaction
(``inbox.services.notifications_group_commit``) for all of them, whatever their threads. A batch
holds at most :data:`GROUP_LIMIT` notifications and updates (at least one call). Validation happens
before a call is queued (``agents.runtime.notifications.validation``); should a batch still fail in
the database, its calls are written again one by one, each in its own transaction, so that only the
call that fails gets the error and its neighbours are stored.
"""

from __future__ import annotations

import asyncio
import weakref

from agents.connections import POOL, async_twin
from agents.runtime.notifications import Ingested
from agents.threads.store import DjangoThreadStore

from .services import notifications_group_commit

#: the most notifications (ingests) plus record updates one group commit takes
GROUP_LIMIT = 500


_group_commit = async_twin(notifications_group_commit, thread=POOL)


class _GroupCommit:
    """The queue of one event loop: jobs (``"ingest"`` or ``"update"``, with their future) wait here
    while a batch is in flight; a single task writes them batch after batch."""

    def __init__(self):  # no reference to the loop: it is the key of ``_groups`` (a weak one)
        self.queue: list[tuple[str, dict, asyncio.Future]] = []
        self.task: asyncio.Task | None = None

    def submit(self, kind: str, job: dict) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.queue.append((kind, job, future))
        if self.task is None:
            self.task = loop.create_task(self._run(), name="mastra-notification-group-commit")
        return future

    def _take(self) -> list[tuple[str, dict, asyncio.Future]]:
        taken, size = [], 0
        while self.queue:
            kind, job, _ = self.queue[0]
            weight = len(job["notifications"] if kind == "ingest" else job["updates"])
            if taken and size + weight > GROUP_LIMIT:
                break
            taken.append(self.queue.pop(0))
            size += weight
        return taken

    async def _run(self) -> None:
        batch: list = []
        try:
            while self.queue:
                batch = self._take()
                try:
                    result = await _group_commit(ingests=[job for kind, job, _ in batch if kind == "ingest"],
                                                 updates=[job for kind, job, _ in batch if kind == "update"])
                except Exception as exc:
                    if len(batch) == 1:
                        _resolve(batch, error=exc)
                    else:
                        await _commit_one_by_one(batch)
                    batch = []
                    continue
                ingests, updates = iter(result["ingests"]), iter(result["updates"])
                _resolve(batch, results=[next(ingests if kind == "ingest" else updates) for kind, _, _ in batch])
                batch = []
        except BaseException as exc:  # cancelled with the loop: nobody waits forever
            _resolve(batch + self.queue, error=exc)
            self.queue = []
            raise
        finally:
            self.task = None


async def _commit_one_by_one(batch: list) -> None:
    """Write each call of a failed batch in a transaction of its own and resolve it with its own
    result or error (in queue order: calls for one thread keep their order)."""
    for position, (kind, job, future) in enumerate(batch):
        try:
            result = await _group_commit(ingests=[job] if kind == "ingest" else [],
                                         updates=[job] if kind == "update" else [])
        except asyncio.CancelledError:
            _resolve(batch[position:], error=asyncio.CancelledError())
            raise
        except Exception as exc:
            _resolve([(kind, job, future)], error=exc)
        else:
            _resolve([(kind, job, future)], results=[result["ingests" if kind == "ingest" else "updates"][0]])


def _resolve(batch: list, *, results: list | None = None, error: BaseException | None = None) -> None:
    for i, (_, _, future) in enumerate(batch):
        if future.done():  # the caller was cancelled
            continue
        if isinstance(error, asyncio.CancelledError):
            future.cancel()
        elif error is not None:
            future.set_exception(error)
        else:
            future.set_result(results[i])


_groups: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _GroupCommit]" = weakref.WeakKeyDictionary()


def _group() -> _GroupCommit:
    loop = asyncio.get_running_loop()
    group = _groups.get(loop)
    if group is None:
        group = _groups[loop] = _GroupCommit()
    return group


class DjangoNotificationStore:
    """``NotificationStore`` on the ORM: every call goes through the loop's group commit."""

    async def ingest(self, *, thread_key: str, thread_store, plan=None, **call) -> Ingested:
        """Store the call's notifications in the loop's group commit. The thread's state is read in
        the same transaction when ``thread_store`` is the ORM's
        (``agents.threads.store.DjangoThreadStore``), and ``plan`` runs there; otherwise the
        outcome has ``thread_read`` False (the caller reads it)."""
        if isinstance(thread_store, DjangoThreadStore):
            call.update(thread_key=thread_key, plan=plan)
        out = await _group().submit("ingest", call)
        return Ingested(records=out["records"], thread_read="thread" in out, thread=out.get("thread"),
                        planned=out.get("planned"))

    async def update(self, *, updates: list[dict], token: str) -> int:
        """Apply ``updates`` to the records ``token`` still claims, in the loop's group commit."""
        return await _group().submit("update", {"updates": updates, "token": token})
