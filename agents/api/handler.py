"""The API's ASGI handler: Django's request handling for ``/api/``, without the site's middleware.

Under ASGI every middleware of ``settings.MIDDLEWARE`` is a sync one: Django runs each of its hooks
in a worker thread, one round trip per hook, about fifteen per request, and these round trips were
most of the cost of an API request (``bench/http_api.py``). The API needs none of them as
middleware: DRF authenticates (:class:`agents.api.auth.SessionCookieAuthentication` loads the session
and the user itself and checks CSRF as DRF does), and the site's security policy (HTTPS redirect,
HSTS, nosniff, X-Frame-Options, Referrer-Policy, COOP) is applied by calling the site's own
``SecurityMiddleware`` and ``XFrameOptionsMiddleware`` hooks in the request's coroutine
(:mod:`agents.api.security`).
"""

from __future__ import annotations

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response

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
    worker thread for it, :mod:`agents.api.security`), and whose requests share the
    process's one worker thread for sync work (Django's handler gives each request a thread of its
    own, and with it a database connection of its own: 50 concurrent requests exhausted
    PostgreSQL's connections, and each request paid a new thread and a new connection). The thread
    runtime does all its database work on that thread already."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"the API's handler serves http, not {scope['type']!r}")
        await self.handle(scope, receive, send)

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async)
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        policy = SecurityPolicy()
        view = convert_exception_to_response(self._get_response_async if is_async else self._get_response)

        # each wrapped as Django wraps a middleware: a view's exception is a response, with the headers
        if is_async:
            async def secured(request):
                refusal = policy.refusal(request)
                return policy.apply(request, refusal if refusal is not None else await view(request))
        else:
            def secured(request):
                refusal = policy.refusal(request)
                return policy.apply(request, refusal if refusal is not None else view(request))
        self._middleware_chain = convert_exception_to_response(secured)


def api_first(site, api, prefix: str = "/api/"):
    """An ASGI app that serves HTTP requests under ``prefix`` with ``api``, everything else with ``site``."""

    async def app(scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith(prefix):
            return await api(scope, receive, send)
        return await site(scope, receive, send)

    return app
