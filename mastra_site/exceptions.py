"""Errors of the site's own services (each with a stable ``code``, as ``agents.runtime.errors``)."""

from __future__ import annotations

from agents.runtime.errors import MastraError


class ErasureRefused(MastraError):
    """A resource cannot be erased now (``mastra_site.resource_erasure``): ``code`` is
    ``resource_busy`` while one of its threads runs, ``invalid_resource`` for an empty id."""

    code = "erasure_refused"
