"""Authentication of API requests: DRF's token in ``Authorization: Token <key>`` or, as most HTTP
clients send it, ``Authorization: Bearer <key>`` (the same tokens, made with ``manage.py
drf_create_token <user>`` or in the admin), and the admin's session."""

from __future__ import annotations

from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user
from rest_framework.authentication import SessionAuthentication, TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"


class SessionCookieAuthentication(SessionAuthentication):
    """DRF's session authentication (the admin's login, for the browser), which also works where
    no session or authentication middleware ran (``agents.api.handler``): it loads the session of
    the request's cookie and its user itself. Unsafe methods need the CSRF token, as DRF's."""

    def authenticate(self, request):
        django_request = request._request
        if not hasattr(django_request, "user"):
            key = django_request.COOKIES.get(settings.SESSION_COOKIE_NAME)
            if not key:
                return None
            if not hasattr(django_request, "session"):
                django_request.session = import_module(settings.SESSION_ENGINE).SessionStore(key)
            django_request.user = get_user(django_request)
        return super().authenticate(request)
