"""The site's security policy on the API's requests and responses.

The API's handler (:mod:`agents.api.handler`) runs without ``settings.MIDDLEWARE``, but not without
its policy: it takes the site's own ``SecurityMiddleware`` and ``XFrameOptionsMiddleware`` entries of
``settings.MIDDLEWARE`` (Django's classes, or the site's subclasses of them) and calls their hooks
itself, in the request's coroutine. Both only read settings and set headers, so the call needs no
worker thread (the thread round trip is what running them as middleware would cost). One policy,
one place: ``SECURE_SSL_REDIRECT``, ``SECURE_REDIRECT_EXEMPT``, ``SECURE_SSL_HOST``,
``SECURE_PROXY_SSL_HEADER``, ``SECURE_HSTS_*``, ``SECURE_CONTENT_TYPE_NOSNIFF``,
``SECURE_REFERRER_POLICY``, ``SECURE_CROSS_ORIGIN_OPENER_POLICY`` and ``X_FRAME_OPTIONS`` mean the
same on an API response as on a page, computed by the same code.

One difference, on purpose: a plain-HTTP request that the site would redirect to HTTPS is redirected
only when it is a ``GET`` or ``HEAD``. Any other method is refused with ``403 https_required``: its
token and body have already crossed the network in clear, and a redirect would only invite the client
to send them again (most clients turn a 301 to a POST into a GET, or replay the POST).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.module_loading import import_string

from .errors import error_response

#: the middleware of ``settings.MIDDLEWARE`` whose policy the API applies (they only set headers)
POLICY_CLASSES = (SecurityMiddleware, XFrameOptionsMiddleware)
#: methods redirected to HTTPS as the site does; any other is refused with ``https_required``
REDIRECTED_METHODS = ("GET", "HEAD")


def unused_get_response(request):  # pragma: no cover - the API calls the hooks, never the middleware
    raise AssertionError("the API calls the policy middleware's hooks directly")


def site_policy_middleware() -> list:
    """Instances of the ``settings.MIDDLEWARE`` entries that are (subclasses of) ``POLICY_CLASSES``,
    in the site's order, built now (they read their settings when built, as the site's do)."""
    classes = [import_string(path) for path in settings.MIDDLEWARE]
    return [cls(unused_get_response) for cls in classes if issubclass(cls, POLICY_CLASSES)]


class SecurityPolicy:
    """The request and response hooks of :func:`site_policy_middleware`, called in order (request)
    and in reverse order (response), as Django's handler calls them."""

    def __init__(self) -> None:
        self.middleware = site_policy_middleware()

    def refusal(self, request):
        """The response that replaces the view's, or ``None``: Django's redirect to HTTPS for a
        ``GET``/``HEAD``, ``403 https_required`` for any other method."""
        for middleware in self.middleware:
            hook = getattr(middleware, "process_request", None)
            try:
                response = hook(request) if hook is not None else None
            except DisallowedHost:
                return error_response("invalid_host", "the Host header is not one of ALLOWED_HOSTS", status=400)
            if response is None:
                continue
            if request.method in REDIRECTED_METHODS or not response.has_header("Location"):
                return response
            message = f"this API accepts HTTPS requests only: send it again to {response['Location']}"
            return error_response("https_required", message, status=403)
        return None

    def apply(self, request, response):
        """Add the policy's headers to ``response`` (HSTS only on a secure request)."""
        for middleware in reversed(self.middleware):
            hook = getattr(middleware, "process_response", None)
            if hook is not None:
                response = hook(request, response)
        return response
