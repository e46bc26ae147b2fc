"""The end of an API request: its response closed and ``request_finished`` sent without a round trip
to the worker thread while the signal's receivers are Django's own.

Django's ASGI handler closes a response through ``sync_to_async(response.close)``: on the worker
thread, one round trip per request after its response is sent. The receivers Django connects to
``request_finished`` do not need that thread:

- ``close_old_connections`` looks after the connections of the thread it runs on. An API request's
  database work runs on the worker thread, whose every call looks after its connection already
  (:func:`agents.connections.async_twin`: one the call left unusable is closed after it; with
  persistent connections, one too old or broken is closed before and after it). On the event
  loop's thread it would close what is not the request's (a test's connection, which holds its
  transaction), so it is not run there.
- ``reset_urlconf`` and ``close_caches`` reset the request's URLconf and close its cache clients:
  both are the request's context's (asgiref's locals, which move with the context to the worker
  thread and back), so they run on the event loop, in that context.

Where a project has connected a receiver of its own (or an async one), the response is closed as
Django closes it, on the worker thread.

The request's start keeps Django's round trip (``request_started.asend``, its sync receivers on the
worker thread) on purpose. Without it, measured with 500 runs at once (``bench/concurrency.py``,
pinned, three runs each, alternated), a run's framework time per step at p50 went from 123-149 ms
to 201-231 ms, and a run from 1.8-2.0 s to 2.4 s: that round trip queues a new request behind
the work already on the worker thread (the runs' writes) before the request's own call queues there,
so the runs under way get the thread first. Without the close's round trip alone, the same
measurements were as good or better (109-120 ms at p50, a run 1.8 s), and a request cost less CPU:
in-process, a ``generate`` request's 0.82 ms became 0.73 (Django's handling and this one alternated
in one pinned process); under daphne (``bench/http_api.py``, pinned, three pairs alternated),
``generate`` 1.03-1.20 ms against 1.15-1.21 and ``send-message`` 3.06-3.32 ms against 3.37-3.78.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import close_caches
from django.core.handlers.base import reset_urlconf
from django.core.signals import request_finished
from django.db import close_old_connections
from django.http import HttpResponseBase

from agents.connections import async_twin

#: Django's receivers of ``request_finished`` that act on the request's context: run on the event loop
_IN_CONTEXT = frozenset({reset_urlconf, close_caches})
#: and the one whose work the worker thread's calls do themselves
_DJANGOS_OWN = _IN_CONTEXT | {close_old_connections}


def _djangos_own(sender: Any) -> list | None:
    """The receivers of ``request_finished`` from ``sender`` when they are all Django's own, else None."""
    sync_receivers, async_receivers = request_finished._live_receivers(sender)  # what send() would call
    if async_receivers or not all(receiver in _DJANGOS_OWN for receiver in sync_receivers):
        return None
    return sync_receivers


async def finished(sender: type | None) -> None:
    """Send ``request_finished`` for a request of ``sender`` that has no response to close (its
    client left before it was answered)."""
    receivers = _djangos_own(sender)
    if receivers is None:
        await request_finished.asend(sender=sender)
        return
    _send_here(receivers, sender)


async def close(response: HttpResponseBase) -> None:
    """Close ``response`` once it is sent, as the server does: its resources (a streamed file) are
    closed and ``request_finished`` is sent."""
    sender = response._handler_class  # what response.close() sends request_finished from
    receivers = _djangos_own(sender)
    if receivers is None:
        await _close_on_worker(response)
        return
    for closer in response._resource_closers:  # what response.close() does before the signal
        try:
            closer()
        except Exception:  # noqa: BLE001 - as response.close(): a closer's failure stops nothing else
            pass
    response._resource_closers.clear()
    response.closed = True
    _send_here(receivers, sender)


def _send_here(receivers: list, sender: Any) -> None:
    """Run the receivers of ``request_finished`` that act on the request's context, here."""
    for receiver in receivers:
        if receiver in _IN_CONTEXT:
            receiver(signal=request_finished, sender=sender)


@async_twin
def _close_on_worker(response: HttpResponseBase) -> None:
    response.close()
