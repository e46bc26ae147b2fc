"""This process's :class:`~.runtime.ThreadRuntime`: one per event loop, built by the factory the
Django app installs at start-up (``agents.apps``), or set directly (tests simulate processes and
restarts with :func:`set_thread_runtime`)."""

from __future__ import annotations

import asyncio
import weakref
from typing import Callable

from ..errors import AgentConfigError
from .runtime import ThreadRuntime

_runtimes: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ThreadRuntime]" = weakref.WeakKeyDictionary()
_factory: Callable[[], ThreadRuntime] | None = None


def set_thread_runtime_factory(factory: Callable[[], ThreadRuntime] | None) -> None:
    """Install how the process builds its ThreadRuntime (the Django app does it at start-up)."""
    global _factory
    _factory = factory
    _runtimes.clear()


def get_thread_runtime_factory() -> Callable[[], ThreadRuntime] | None:
    """The factory :func:`set_thread_runtime_factory` installed, or None."""
    return _factory


def get_thread_runtime() -> ThreadRuntime:
    """This process's runtime (one per event loop: its tasks and channel reader live on that loop)."""
    loop = asyncio.get_running_loop()
    runtime = _runtimes.get(loop)
    if runtime is None:
        if _factory is None:
            raise AgentConfigError("memory", "thread features need a thread store: run inside the Django site "
                                             "(agents app installed) or call set_thread_runtime_factory()")
        runtime = _runtimes[loop] = _factory()
    return runtime


def set_thread_runtime(runtime: ThreadRuntime | None) -> None:
    """Use ``runtime`` on the running loop (tests simulate processes and restarts with it)."""
    loop = asyncio.get_running_loop()
    if runtime is None:
        _runtimes.pop(loop, None)
    else:
        _runtimes[loop] = runtime


__all__ = ["get_thread_runtime", "get_thread_runtime_factory", "set_thread_runtime", "set_thread_runtime_factory"]
