"""A web process imports the SDKs of its agents' models before it serves.

The provider modules import their SDK on a model's first call (so that a site whose agents use
``local/echo`` never loads one). In a serving process that first call then imports the SDK on the
event loop: for ``openai``, about 700 modules in 0.4 s during which every stream, websocket and run
of the process waits; and the SDK's 65,000 objects, created after the process froze its start-up
heap (:mod:`agents.heap`), are walked by every full collection of the garbage collector from then
on (30 ms each, measured).

:func:`preload_models` loads them first: for every agent of the site (and the agents it delegates
to), the models named by its ``model`` (a ``"provider/model"`` string, a config dict, a model
object or a fallback chain of them) that have a ``preload()`` (the SDK adapters,
:meth:`~agents.runtime.providers.sdk.SDKClientCache.preload`), once per model class. A model chosen
at run time (a callable ``model``, a caller's ``model`` option) is loaded on its first call, as
before. ``mastra_site.asgi`` calls it before freezing the heap.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from .base import is_model_object
from .chain import chain_of, is_chain
from .router import resolve_model

logger = logging.getLogger(__name__)


def _models(spec: Any) -> list[Any]:
    if is_chain(spec):
        return [entry.model for entry in chain_of(spec)]
    if isinstance(spec, (str, dict)) or is_model_object(spec):
        return [resolve_model(spec)]
    return []  # a callable of the request context: chosen per run


def _agents(agents: Iterable[Any]) -> list[Any]:
    seen: dict[int, Any] = {}
    pending = list(agents)
    while pending:
        agent = pending.pop(0)
        if id(agent) in seen:
            continue
        seen[id(agent)] = agent
        delegates = getattr(agent, "_agents", None)
        if isinstance(delegates, dict):
            pending.extend(delegates.values())
    return list(seen.values())


def preload_models(agents: Iterable[Any]) -> list[str]:
    """Preload the SDK of every model class ``agents`` name; returns the names of the classes
    preloaded, in order (a class whose preload failed is logged and left out)."""
    done: list[type] = []
    for agent in _agents(agents):
        for model in _models(agent.model):
            kind = type(model)
            if kind in done or not callable(getattr(model, "preload", None)):
                continue
            try:
                model.preload()
            except Exception:  # the first call will meet (and report) the same problem
                logger.warning("could not preload the SDK of %s", kind.__name__, exc_info=True)
                continue
            done.append(kind)
    return [kind.__name__ for kind in done]


__all__ = ["preload_models"]
