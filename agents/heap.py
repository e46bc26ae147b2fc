"""The process's long-lived heap, kept out of the garbage collector's full collections.

Everything a process builds while it starts (Django's apps, models and URL resolvers, the site's
agents and tools, the provider SDKs, twisted and channels) lives until the process ends, yet
CPython's cyclic collector walks all of it at every full (generation 2) collection: on a serving
process that is 150,000 to 300,000 objects, 100 to 200 ms during which the event loop stands still
(every stream, every websocket and every run of the process waits), a few times a minute under load.

:func:`heap_freeze` moves every object alive at that moment to the collector's permanent
generation (``gc.freeze``): it is never walked again, and what the process allocates afterwards
(requests, runs, chunks) is collected as before. It runs once the process has loaded what it
serves: at the end of ``AgentsConfig.ready`` (every process: a server, a worker, a script that
calls ``django.setup()``) and again when the ASGI application is built (``mastra_site.asgi``, after
channels, twisted and the API's modules are imported). Objects frozen are never freed, even if
unreachable later; startup objects are not released anyway. ``MASTRA_GC_FREEZE=false`` turns it off.

:func:`heap_thresholds` sets the collector's thresholds for a server. Its youngest generation:
CPython collects it every 700 net allocations, so on a busy process whatever lives a few
milliseconds (a step's request and chunks, a socket's frame) survives two young collections and is
promoted to the old generation, which only a full collection walks and frees; promotions are what
start full collections (when they exceed a quarter of the heap). With 500 runs at once in one
process (``bench/concurrency.py``), full collections of 250,000 to 300,000 objects came every 2 to
3 s and stopped the event loop 150 to 250 ms each. ``MASTRA_GC_YOUNG_OBJECTS`` (default 5,000) is
the youngest generation's threshold in serving processes (``mastra_site.asgi``); 0 leaves CPython's.

Its full collections: CPython considers one after every 10 collections of the middle generation,
and makes it once the objects promoted since the last exceed a quarter of those it kept then. The
frozen heap is not counted there, so a serving process, whose old generation holds little besides
its runs in flight, met that quarter after a few seconds of load: with 500 runs at once the second
burst of ``bench/concurrency.py`` had a full collection of 250 to 430 ms. ``MASTRA_GC_FULL_EVERY``
(default 100) is how many middle collections come between two full ones at least (about 5 million
net allocations with the defaults); 0 leaves CPython's 10. Cyclic garbage that reached the old
generation waits longer for it, so a serving process makes little: a request through the API
leaves no cycle (``agents.api.handler``, ``agents.api.base``), nor does a run's trace
(``agents.runtime.run.ending``) or an input's transaction (``agents.threads.leases``).
Measured on PostgreSQL and Redis, four bursts in a row: 196, 202, 204 and 209 MB after each
(before those two, 200, 221, 245 and 269 MB with 100, and with 10 a full collection in the second
and fourth bursts that stopped the event loop 357 and 595 ms).
"""

from __future__ import annotations

import gc

from django.conf import settings


def heap_freeze(*, collect: bool = False) -> int:
    """Freeze the objects alive now (after a full collection when ``collect``, so that startup
    garbage is freed rather than kept); returns how many are frozen in all, 0 when turned off."""
    if not settings.MASTRA_GC_FREEZE:
        return 0
    if collect:
        gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def heap_thresholds() -> tuple[int, int, int]:
    """Set the youngest generation's threshold to ``MASTRA_GC_YOUNG_OBJECTS`` and the oldest's to
    ``MASTRA_GC_FULL_EVERY`` (each unless 0: CPython's then); returns the collector's thresholds now."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(settings.MASTRA_GC_YOUNG_OBJECTS or young, middle, settings.MASTRA_GC_FULL_EVERY or old)
    return gc.get_threshold()


__all__ = ["heap_freeze", "heap_thresholds"]
