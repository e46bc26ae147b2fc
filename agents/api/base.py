"""``ApiView``: a DRF ``APIView`` whose handlers are coroutines, served by Django's async path.

DRF's authentication, permissions and throttling run as DRF runs them (one hop to Django's worker
thread: a token is a database read); the handler runs on the event loop, where the runtime lives.
Handlers return Django responses (JSON bytes or an SSE stream); every exception becomes the one
error body of :mod:`.errors`. The query string and the URL's parts are text the database may be
asked to compare: one with a NUL character is refused before any handler runs (``invalid_text``)."""

from __future__ import annotations

from typing import Any
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpResponse
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.views import APIView

from agents.connections import async_twin
from agents.json_text import dumps_compact
from agents.access import Caller
from agents.api.auth import CachedTokenAuthentication
from agents.registry import get_mastra

from .errors import exception_response
from .parsing import request_text_check
from .throttling import rate_cache


def throttle_counters_in_memory() -> bool:
    """Whether DRF's throttles count in this process's memory (the default cache is local memory)."""
    return isinstance(rate_cache(), LocMemCache)


def json_response(data: Any, status: int = 200) -> HttpResponse:
    """JSON with its ``Content-Length`` (no middleware sets it on the API's handler)."""
    content = dumps_compact(data).encode()
    return HttpResponse(content, status=status, content_type="application/json",
                        headers={"Content-Length": str(len(content))})


class OwnAnswers(DefaultContentNegotiation):
    """The API's views write their answers themselves (JSON, or an SSE stream), whatever the
    request's ``Accept`` header or ``format`` parameter say, as Mastra's server does. DRF's own
    choice of a renderer would refuse an SSE client's ``Accept: text/event-stream`` (406) and fail
    on an unknown ``?format=``. Its choice of a parser stays DRF's: the views read their bodies
    themselves (:mod:`.parsing`), but a session's CSRF check reads a form's fields through DRF's
    request (a multipart recording of ``voice/listen``)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ApiView(APIView):
    view_is_async = True
    content_negotiation_class = OwnAnswers
    #: DRF's checks run on the worker thread (a token or a session is a database read); a view
    #: without authentication or throttles (a signed webhook) runs them on the event loop instead,
    #: so that its reply never queues behind the runs' database work
    checks_need_database = True

    def initial_checks(self, request) -> Caller:
        """DRF's ``initial`` (auth, permissions, throttles) and the caller it found (sync)."""
        self.initial(request, *self.args, **self.kwargs)
        return Caller.of(request.user)

    def checks_cached(self, request) -> bool:
        """Whether the checks can run here, on the event loop: a token this process checked lately
        (``agents.api.auth.TokenCache``), and no throttle, or throttles counting in this process's
        memory (``LocMemCache``, the embedded default; counters in Redis are network calls)."""
        return ((not self.throttle_classes or throttle_counters_in_memory())
                and CachedTokenAuthentication.cached_key(request._request))

    async def dispatch(self, request, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        try:
            # the site's middleware would check the Host header (ALLOWED_HOSTS); the API's handler
            # runs none (agents.api.handler), so the view does
            request._request.get_host()
            request_text_check(request._request, kwargs)
            handler = getattr(self, request.method.lower(), None)
            if request.method.lower() not in self.http_method_names or handler is None:
                self.http_method_not_allowed(request)
            if self.checks_need_database and not self.checks_cached(request):
                self.caller = await async_twin(self.initial_checks)(request)
            else:
                self.caller = self.initial_checks(request)
            response = await handler(request, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every error becomes a JSON error body
            response = self.api_error(exc)
        finally:
            # reference cycles that only the garbage collector would free (a long request, a
            # stream, reaches its oldest generation, which a server collects seldom: agents.heap):
            # DRF's request holds its parser context, which holds the request and this view (the
            # API reads its bodies itself, agents.api.parsing, never through DRF's parsers, the
            # context's only reader), and Django's ``setup`` stored ``self.get`` as ``self.head``
            request.parser_context = None
            self.__dict__.pop("head", None)
        return response

    def api_error(self, exc: Exception) -> HttpResponse:
        from rest_framework import exceptions as drf

        if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
            exc.auth_header = 'Token realm="api"'
        return exception_response(exc)

    async def options(self, request, *args, **kwargs):  # DRF's is sync; every handler here is async
        return HttpResponse(status=204, headers={"Allow": ", ".join(self.allowed_methods)})

    @staticmethod
    def agent(agent_id: str):
        """The registered agent (``agent_not_found``, 404)."""
        return get_mastra().get_agent(agent_id)
