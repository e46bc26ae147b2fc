"""The API's ASGI handler: Django's request handling for ``/api/``, without the site's middleware.

Under ASGI every middleware of ``settings.MIDDLEWARE`` is a sync one: Django runs each of its hooks
in a worker thread, one round trip per hook, about fifteen per request, and these round trips were
most of the cost of an API request (``bench/http_api.py``). The API needs none of them as
middleware: DRF authenticates (:class:`agents.api.auth.SessionCookieAuthentication` loads the session
and the user itself and checks CSRF as DRF does), and the site's security policy (HTTPS redirect,
HSTS, nosniff, X-Frame-Options, Referrer-Policy, COOP) is applied by calling the site's own
``SecurityMiddleware`` and ``XFrameOptionsMiddleware`` hooks in the request's coroutine
(:mod:`agents.api.security`), and its CORS headers, when origins are configured, by calling
django-cors-headers' own (:mod:`agents.api.cors`).
"""

from __future__ import annotations

import asyncio

from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.core.signals import request_started
from django.http import HttpResponseBase
from django.urls import set_script_prefix

from . import request_signals
from .cors import ApiCors
from .security import SecurityPolicy


class QuietDisconnectHandler(ASGIHandler):
    """Django's ``ASGIHandler``, whose requests end at the client's disconnect without an exception.

    Django's ``listen_for_disconnect`` raises ``RequestAborted``, which ``handle`` takes from the
    task's result and ignores: the exception then holds ``handle``'s frame, which holds the task,
    which holds the exception, a reference cycle per request (the request, its body and its URL
    resolution with it) that only a full collection of the garbage collector frees, and a serving
    process makes those seldom (``agents.heap``). Daphne tells every request's end so, hence every
    request made one. The site's pages are served by this handler, the API by :class:`ApiHandler`."""

    async def listen_for_disconnect(self, receive):
        """Ends at the client's disconnect (``handle`` then cancels a response still going)."""
        message = await receive()
        if message["type"] != "http.disconnect":  # as Django's: nothing else may come after the body
            raise AssertionError(f"Invalid ASGI message after request body: {message['type']}")


class ApiHandler(QuietDisconnectHandler):
    """``ASGIHandler`` whose middleware chain is the site's security policy around the view (no
    worker thread for it, :mod:`agents.api.security`), whose requests share the
    process's one worker thread for sync work (Django's handler gives each request a thread of its
    own, and with it a database connection of its own: 50 concurrent requests exhausted
    PostgreSQL's connections, and each request paid a new thread and a new connection; the thread
    runtime does all its database work on that thread already), and whose responses are closed
    without a round trip to that thread while ``request_finished`` has only Django's receivers
    (:mod:`.request_signals`)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"the API's handler serves http, not {scope['type']!r}")
        await self.handle(scope, receive, send)

    async def handle(self, scope, receive, send):
        """A request, as Django's handler serves it (the body read, ``request_started`` sent, the
        response sent while the client's disconnect is listened for, the view cancelled at it), with
        the response closed and ``request_finished`` sent by :mod:`.request_signals` instead of
        through ``sync_to_async``."""
        try:
            body = await self.read_body(receive)
        except RequestAborted:  # the client left while sending it
            return
        try:
            set_script_prefix(get_script_prefix(scope))
            # as Django sends it: its sync receivers on the worker thread, a round trip that paces new
            # requests behind the runs' work there (measured, :mod:`.request_signals`)
            await request_started.asend(sender=self.__class__, scope=scope)
            request, refusal = self.create_request(scope, body)
            if request is None:  # a request Django refuses before any view (too many fields, a bad host)
                await self.send_response(refusal, send)
                await request_signals.close(refusal)
                return
            response = await self.answer_unless_gone(request, receive, send)
            if response is None:
                await request_signals.finished(self.__class__)
            else:
                await request_signals.close(response)
        finally:
            body.close()

    async def answer_unless_gone(self, request, receive, send) -> HttpResponseBase | None:
        """The response to ``request``, sent; None when the client left before it was (the view's
        task is cancelled then: a view can tell, as under Django's handler)."""
        async def answer():
            response = await self.run_get_response(request)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:  # the client left while it was sent: it is still closed
                pass
            return response

        gone = asyncio.create_task(self.listen_for_disconnect(receive))
        answering = asyncio.create_task(answer())
        await asyncio.wait((gone, answering), return_when=asyncio.FIRST_COMPLETED)
        for task in (gone, answering):
            if not task.done():
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        if not gone.cancelled():
            gone.result()  # an ASGI message after the body raises here, as under Django's handler
        return None if answering.cancelled() else answering.result()

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async)
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        policy, cors = SecurityPolicy(), ApiCors()
        view = convert_exception_to_response(self._get_response_async if is_async else self._get_response)

        # each wrapped as Django wraps a middleware: a view's exception is a response, with the headers
        def before_view(request):  # an HTTPS redirect, or a CORS preflight's answer (no sign-in)
            refusal = policy.refusal(request)
            return refusal if refusal is not None else cors.preflight(request)

        if is_async:
            async def secured(request):
                early = before_view(request)
                return cors.apply(request, policy.apply(request, early if early is not None else await view(request)))
        else:
            def secured(request):
                early = before_view(request)
                return cors.apply(request, policy.apply(request, early if early is not None else view(request)))
        self._middleware_chain = convert_exception_to_response(secured)


def api_first(site, api, prefix: str = "/api/"):
    """An ASGI app that serves HTTP requests under ``prefix`` with ``api``, everything else with ``site``."""

    async def app(scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith(prefix):
            return await api(scope, receive, send)
        return await site(scope, receive, send)

    return app
