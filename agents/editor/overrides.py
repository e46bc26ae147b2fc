"""The runtime's overrides provider for a Django site (``Mastra(overrides=EditorOverrides())``).

Published overrides are served from a per-process cache. The cache reloads them when the
database's editor generation (bumped by every publish and roll back) differs from the one it
loaded, and it reads the generation at most once every ``MASTRA_EDITOR_REFRESH_MS`` (1000 by
default): a publish reaches the next run of every process within that delay, without a restart,
and at once in the publishing process (the publish invalidates the local cache on commit).

A run that selects a draft or a version id (``versions={"agents": {...}}``) reads it from the
database. Whatever a version stores, the fields the agent's code locks now (its ``editor`` option)
are dropped by the runtime (``agents.runtime.overrides``): an override saved before a lock was
added is ignored at run time.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Iterable
from django.conf import settings

from agents.connections import async_twin
from agents.editor.selectors import agents_with_draft, generation_read, published_overrides_all, version_selected
from agents.runtime.overrides import AgentOverrides


class PublishedCache:
    """``{agent id: (version id, overrides)}`` of the published versions, refreshed by generation."""

    def __init__(self, *, refresh_ms: int | None = None, clock: Callable[[], float] = time.monotonic):
        self.refresh_ms = refresh_ms
        self.clock = clock
        self.entries: dict[str, tuple[str, dict]] | None = None
        self.generation: int | None = None
        self.checked_at = -math.inf
        self.loads = 0  # how many times the published overrides were read (for tests and benches)
        self.lock = threading.Lock()

    def interval_s(self) -> float:
        ms = self.refresh_ms if self.refresh_ms is not None else settings.MASTRA_EDITOR_REFRESH_MS
        return ms / 1000.0

    def fresh(self) -> bool:
        """True while the last generation check is recent enough to answer without the database."""
        return self.entries is not None and self.clock() - self.checked_at < self.interval_s()

    def invalidate(self) -> None:
        """Check the generation on the next read (a publish in this process)."""
        self.checked_at = -math.inf

    def reset(self) -> None:
        """Forget everything (tests: the database was rolled back under the cache)."""
        with self.lock:
            self.entries, self.generation, self.checked_at = None, None, -math.inf

    def cached(self, agent_id: str) -> tuple[str, dict] | None:
        """The cached entry, without the database: call only when :meth:`fresh`."""
        return (self.entries or {}).get(agent_id)

    def get(self, agent_id: str) -> tuple[str, dict] | None:
        """The published ``(version id, overrides)`` of ``agent_id`` (reads the database when the
        last check is older than the refresh interval; sync: call from a worker thread)."""
        with self.lock:
            if not self.fresh():
                # generation first: a publish landing between the two reads makes the next check reload
                generation = generation_read()
                if generation != self.generation or self.entries is None:
                    self.entries = published_overrides_all()
                    self.generation = generation
                    self.loads += 1
                self.checked_at = self.clock()
            return self.entries.get(agent_id)


#: this process's cache of published overrides
published_cache = PublishedCache()


def overrides_build(agent: Any, found: tuple[str, dict] | None) -> AgentOverrides | None:
    """The run's overrides from a stored ``(version id, overrides)`` (the runtime drops what the
    agent's ``editor`` locks, ``agents.runtime.overrides.overrides_resolve``)."""
    if found is None:
        return None
    version_id, kept = found
    kept = kept or {}
    if not kept:
        return AgentOverrides(version_id=version_id)
    return AgentOverrides(instructions=kept.get("instructions"),
                          tools=tuple(kept["tools"]) if "tools" in kept else None,
                          tool_descriptions=dict(kept.get("tool_descriptions") or {}), version_id=version_id,
                          model=tuple(kept["model"]) if kept.get("model") else None)


class EditorOverrides:
    """The overrides provider of ``agents.runtime.overrides`` backed by the editor's tables."""

    def __init__(self, cache: PublishedCache | None = None):
        self.cache = cache or published_cache

    async def agent_overrides(self, agent: Any, selection: dict | None) -> AgentOverrides | None:
        if selection is None or selection == {"status": "published"}:
            if self.cache.fresh():
                return overrides_build(agent, self.cache.cached(agent.id))
            return overrides_build(agent, await async_twin(self.cache.get)(agent.id))
        found = await async_twin(version_selected)(agent_id=agent.id, selection=selection)
        return overrides_build(agent, found)

    async def agents_with_draft(self, agents: Iterable[Any]) -> set[str]:
        """The ids of ``agents`` with a draft that differs from the published version (``hasDraft``)."""
        return await async_twin(agents_with_draft)({agent.id: agent.editor for agent in agents})


__all__ = ["EditorOverrides", "PublishedCache", "overrides_build", "published_cache"]
