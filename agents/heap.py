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


__all__ = ["heap_freeze"]
