"""Which pages may open a websocket: the site's own origin, or one of ``CSRF_TRUSTED_ORIGINS``
(docs/security.md, "The chat websocket").

A browser sends the site's cookies with a websocket handshake whatever page opens it, and no CORS
rule stops a page from opening one: without this check a page on another port of the same host
(``http://localhost:3000``), or any site, could talk as the signed-in user. The check is Django's
CSRF origin check, for the handshake:

- the ``Host`` header must name one of ``ALLOWED_HOSTS`` (as ``HttpRequest.get_host`` checks it; a
  DNS-rebinding name pointing at the server is refused, same-origin or not);
- the ``Origin`` header must be the request's own ``scheme://host[:port]``, exactly as the browser
  serializes it, the scheme being ``https`` for a ``wss`` socket or when ``SECURE_PROXY_SSL_HEADER``
  says so, else ``http``; or be listed in ``CSRF_TRUSTED_ORIGINS`` (exactly, or matching a
  ``https://*.example.com`` entry, as Django's CSRF check matches them);
- a handshake without an ``Origin`` (or with several) is refused: browsers always send one, other
  clients use the HTTP API.

A refused handshake is denied before it is accepted (the client sees HTTP 403).
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

logger = logging.getLogger(__name__)


def header_values(scope: dict, meta_name: str) -> list[str]:
    """The values of a header named as Django's ``request.META`` names it (``HTTP_X_FORWARDED_PROTO``
    matches ``X-Forwarded-Proto``, as Django's ASGI request maps names)."""
    wanted = meta_name.removeprefix("HTTP_")
    return [value.decode("latin-1") for name, value in scope.get("headers", ())
            if name.decode("latin-1").upper().replace("-", "_") == wanted]


def request_host(scope: dict) -> str | None:
    """The handshake's host (``X-Forwarded-Host`` with ``USE_X_FORWARDED_HOST``, else ``Host``) when
    it is one of ``ALLOWED_HOSTS``, else None."""
    hosts = (header_values(scope, "HTTP_X_FORWARDED_HOST") if settings.USE_X_FORWARDED_HOST else []) \
        or header_values(scope, "HTTP_HOST")
    if len(hosts) != 1:
        return None
    host = hosts[0]
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # as HttpRequest.get_host
    domain, _port = split_domain_port(host)
    return host if domain and validate_host(domain, allowed) else None


def request_scheme(scope: dict) -> str:
    """``https`` or ``http``: ``SECURE_PROXY_SSL_HEADER`` when the proxy sent it (as
    ``HttpRequest.is_secure``), else the socket's own scheme (``wss`` is https; ASGI's default is ws)."""
    if settings.SECURE_PROXY_SSL_HEADER:
        name, secure_value = settings.SECURE_PROXY_SSL_HEADER
        values = header_values(scope, name)
        if values:
            return "https" if values[0].split(",", 1)[0].strip() == secure_value else "http"
    return "https" if scope.get("scheme", "ws") in ("wss", "https") else "http"


def trusted_origin(origin: str) -> bool:
    """``origin`` is one of ``CSRF_TRUSTED_ORIGINS``: exactly, or under a ``scheme://*.domain`` entry."""
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    return any(is_same_domain(parsed.netloc, trusted.netloc.lstrip("*"))
               for trusted in map(urlsplit, settings.CSRF_TRUSTED_ORIGINS)
               if "*" in trusted.netloc and trusted.scheme == parsed.scheme)


def websocket_origin_allowed(scope: dict) -> bool:
    """Whether the websocket handshake of ``scope`` may go on (the module's rules)."""
    host = request_host(scope)
    origins = header_values(scope, "HTTP_ORIGIN")
    if host is None or len(origins) != 1:
        return False
    origin = origins[0]
    return origin == f"{request_scheme(scope)}://{host}" or trusted_origin(origin)


class SameOriginValidator:
    """ASGI middleware: a websocket handshake :func:`websocket_origin_allowed` refuses is denied."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not websocket_origin_allowed(scope):
            logger.info("websocket refused: origin %r for host %r", header_values(scope, "HTTP_ORIGIN"),
                        header_values(scope, "HTTP_HOST"))
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
