"""The thread runtime: subscriptions, thread inputs (messages and signals), leases and delivery.

One module per job:

- ``store``: the :class:`ThreadStore` and :class:`PubSub` protocols, :func:`thread_key`;
- ``decision``: DESIGN §4's table, once: whether a run holds a thread, what happens to an input,
  which inputs the next run takes (both stores call it; they only lock, load and persist);
- ``memory_store``: :class:`InMemoryThreadStore`, the protocol in memory (runtime tests);
- ``inputs``: an input's target and ``if_active`` / ``if_idle`` branches, :class:`SendResult`;
- ``admission``: :class:`AcceptGate`, how many inputs a process accepts at once;
- ``events``: a run's event stream (``seq``, batching, flush, publish here and elsewhere);
- ``subscriptions``: :class:`ThreadSubscription` and this process's subscribers (bounded buffers);
- ``background``: the runtime's background tasks and the wait for them;
- ``agents``: :class:`RunnableAgents`, the agents a runtime can run (served ones and the registry);
- ``runtime``: :class:`ThreadRuntime` (send and route, start and end runs, renew, abort, recover,
  resume);
- ``process``: this process's runtime (:func:`get_thread_runtime`).
"""

from ..signal import message_to_signal
from .events import ActiveRun, EventPublisher
from .inputs import IF_ACTIVE, IF_IDLE, SendResult, parse_branch
from .memory_store import InMemoryThreadStore
from .process import get_thread_runtime, get_thread_runtime_factory, set_thread_runtime, set_thread_runtime_factory
from .runtime import ThreadRuntime
from .store import AbortRequest, Acceptance, PubSub, Renewal, RunEnd, RunLease, ThreadStore, group_name, thread_key
from .subscriptions import SUBSCRIBER_BUFFER_MAX, SUBSCRIBER_OVERFLOW, ThreadSubscription

__all__ = ["AbortRequest", "Acceptance", "ActiveRun", "EventPublisher", "IF_ACTIVE", "IF_IDLE", "InMemoryThreadStore", "PubSub",
           "Renewal", "RunEnd", "RunLease", "SUBSCRIBER_BUFFER_MAX", "SUBSCRIBER_OVERFLOW", "SendResult", "ThreadRuntime", "ThreadStore",
           "ThreadSubscription", "get_thread_runtime", "get_thread_runtime_factory", "group_name", "message_to_signal", "parse_branch",
           "set_thread_runtime", "set_thread_runtime_factory", "thread_key"]
