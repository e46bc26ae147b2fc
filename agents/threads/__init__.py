"""Thread coordination on the database and between processes.

One module per job; the runtime (``agents.runtime.threads``) reaches them through
:class:`~agents.threads.store.DjangoThreadStore` (its ``ThreadStore`` protocol) and
:class:`~agents.threads.pubsub.ChannelLayerPubSub` (its ``PubSub``):

- ``identity``: a thread is (resource id, thread id); its key is its ``Thread`` row's primary key;
- ``activity``: whether a thread is active (the one rule), the thread's state;
- ``leases``: the lease row (lock, take, release, renew);
- ``inputs``: the decision for each input (accept), the inputs a run takes at a step boundary, the queue;
- ``retries``: the inputs of a run whose end was never saved (a dead owner's, reclaimed; a failed end);
- ``events``: the event log with its per-thread ``seq``;
- ``runs``: a run's end (and the next run), suspension, resumption, abort;
- ``recovery``: threads whose owner died or that wait with no owner;
- ``pubsub``: chunks and abort requests on the Channels layer;
- ``store``: ``DjangoThreadStore`` and the async twins of the services.

Every service is one transaction; every lease change is a compare-and-set (owner run id and
fencing token), so two processes never both own a thread (invariant 2) and an accepted input is
stored before the call returns (invariant 1).
"""
