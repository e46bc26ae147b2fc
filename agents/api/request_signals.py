"""An API request's two Django signals, ``request_started`` and ``request_finished``, sent without a
round trip to the worker thread while their receivers are Django's own.

Django's ASGI handler sends both through ``sync_to_async``: at a request's start its sync receivers
run as one call on the worker thread, and at its end so does ``response.close()``, which sends
``request_finished``. Two round trips per request besides its own work: measured in-process
(``POST /api/agents/echo/generate`` through the API's handler and through Django's handling,
alternated in one pinned process, the CPU of every thread), 0.30 ms of a ``generate`` request's
0.82. The receivers Django connects need neither:

- ``close_old_connections`` (both signals) looks after the connections of the thread it runs on. An
  API request's database work runs on the worker thread, whose every call looks after its connection
  already (:func:`agents.connections.async_twin`: one the call left unusable is closed after it; with
  persistent connections, one too old or broken is closed before and after it). On the event loop's
  thread it would close what is not the request's: a test's connection, which holds its transaction.
- ``reset_queries`` (start) empties the worker thread's log of queries, which is kept under ``DEBUG``
  only: then, and only then, it runs there.
- ``reset_urlconf`` and ``close_caches`` (end) reset the request's URLconf and close its cache
  clients: both are the request's context's (asgiref's locals, which move with the context to the
  worker thread and back), so they run on the event loop, in that context.

Where a project has connected a receiver of its own (or an async one), the signal is sent as Django
sends it: the sync receivers on the worker thread, the async ones on the event loop.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import close_caches
from django.core.handlers.base import reset_urlconf
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, reset_queries
from django.dispatch import Signal
from django.http import HttpResponseBase

from agents.connections import async_twin

#: Django's receivers whose work an API request does not need (the worker thread's calls look after
#: its connection), or needs on the worker thread (``reset_queries``, under ``DEBUG``)
_CONNECTIONS = frozenset({close_old_connections, reset_queries})
#: Django's receivers that act on the request's context: run on the event loop
_CONTEXT = frozenset({reset_urlconf, close_caches})


def _djangos_own(signal: Signal, sender: Any) -> list | None:
    """The receivers of ``signal`` from ``sender`` when they are all Django's own (the sync ones of
    :data:`_CONNECTIONS` and :data:`_CONTEXT`), else None."""
    sync_receivers, async_receivers = signal._live_receivers(sender)  # what Signal.send would call
    if async_receivers or not all(r in _CONNECTIONS or r in _CONTEXT for r in sync_receivers):
        return None
    return sync_receivers


async def started(sender: type, scope: dict) -> None:
    """Send ``request_started`` for a request of ``sender`` (the handler's class)."""
    receivers = _djangos_own(request_started, sender)
    if receivers is None:
        await request_started.asend(sender=sender, scope=scope)
        return
    for receiver in receivers:
        if receiver in _CONTEXT:
            receiver(signal=request_started, sender=sender, scope=scope)
    if settings.DEBUG and reset_queries in receivers:
        await _reset_worker_queries()


async def finished(sender: type | None) -> None:
    """Send ``request_finished`` for a request of ``sender`` that has no response to close (its
    client left before it was answered)."""
    receivers = _djangos_own(request_finished, sender)
    if receivers is None:
        await request_finished.asend(sender=sender)
        return
    _send_here(receivers, sender)


async def close(response: HttpResponseBase) -> None:
    """Close ``response`` once it is sent, as the server does: its resources (a streamed file) are
    closed and ``request_finished`` is sent."""
    sender = response._handler_class  # what response.close() sends request_finished from
    receivers = _djangos_own(request_finished, sender)
    if receivers is None:
        await _close_on_worker(response)
        return
    for closer in response._resource_closers:  # what response.close() does before the signal
        try:
            closer()
        except Exception:  # noqa: BLE001 - as response.close(): a closer's failure ends nothing else
            pass
    response._resource_closers.clear()
    response.closed = True
    _send_here(receivers, sender)


def _send_here(receivers: list, sender: Any) -> None:
    """Run the receivers of ``request_finished`` that act on the request's context, here."""
    for receiver in receivers:
        if receiver in _CONTEXT:
            receiver(signal=request_finished, sender=sender)


@async_twin
def _reset_worker_queries() -> None:
    reset_queries()


@async_twin
def _close_on_worker(response: HttpResponseBase) -> None:
    response.close()
