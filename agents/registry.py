"""Finds the site's ``Mastra`` instance through ``settings.MASTRA`` ("module:attribute"), and what
that module declares beside it."""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module

from django.conf import settings

from agents.runtime.mastra import Mastra


@lru_cache(maxsize=1)
def get_mastra() -> Mastra:
    module_name, _, attribute = settings.MASTRA.partition(":")
    mastra = getattr(import_module(module_name), attribute or "mastra")
    if not isinstance(mastra, Mastra):
        raise TypeError(f"settings.MASTRA must point at a Mastra instance, got {type(mastra).__name__}")
    return mastra


def declared_schedules() -> list[dict]:
    """The schedules the module of ``settings.MASTRA`` declares in ``DECLARED_SCHEDULES`` (none when
    it declares none): a site's own module, not the demo's."""
    module = import_module(settings.MASTRA.partition(":")[0])
    return list(getattr(module, "DECLARED_SCHEDULES", ()))
