"""The HTTP API's CORS headers, for browser apps on other origins (``MASTRA_API_CORS_ORIGINS``,
docs/api.md): django-cors-headers' own checks and headers, applied by the API's handler
(:mod:`.handler`) around its views, as its middleware would apply them (the API runs without the
site's middleware). With no origin configured nothing is done: no header, and a preflight is
answered as any ``OPTIONS`` request (the views' sign-in first)."""

from __future__ import annotations

from corsheaders.conf import conf
from corsheaders.middleware import CorsMiddleware
from django.http import HttpRequest
from django.http.response import HttpResponseBase


def cors_configured() -> bool:
    """Whether any origin may read the API's answers (read at each request: tests change it)."""
    return bool(conf.CORS_ALLOW_ALL_ORIGINS or conf.CORS_ALLOWED_ORIGINS or conf.CORS_ALLOWED_ORIGIN_REGEXES)


class ApiCors:
    """django-cors-headers' ``CorsMiddleware`` hooks, called by the handler in the request's
    coroutine (they read headers and settings only)."""

    def __init__(self) -> None:
        self.middleware = CorsMiddleware(lambda request: None)

    def preflight(self, request: HttpRequest) -> HttpResponseBase | None:
        """The answer to a CORS preflight (``OPTIONS`` with ``Access-Control-Request-Method``), before
        any sign-in: a browser sends none with it. None for any other request."""
        if not cors_configured():
            return None
        return self.middleware.check_preflight(request)

    def apply(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        """``response`` with the CORS headers its request's ``Origin`` may have."""
        if not cors_configured():
            return response
        return self.middleware.add_response_headers(request, response)
