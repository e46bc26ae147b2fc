"""Authentication of API requests: DRF's token in ``Authorization: Token <key>`` or, as most HTTP
clients send it, ``Authorization: Bearer <key>`` (the same tokens, made with ``manage.py
drf_create_token <user>`` or in the admin), and the admin's session."""

from __future__ import annotations

import threading
import time
from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user
from rest_framework.authentication import SessionAuthentication, TokenAuthentication, get_authorization_header


class TokenCache:
    """The tokens this process checked lately: ``key -> (user, token, expiry)``, each kept for
    ``MASTRA_API_TOKEN_CACHE_S`` seconds (0: off), at most ``MASTRA_API_TOKEN_CACHE_MAX`` of them (the
    oldest go first). A token deleted or a user changed in this process is forgotten at once
    (:func:`token_cache_forget`); in another process, within the seconds. A hit needs no database
    read, so a request's checks can run without a hop to the worker thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple] = {}

    def get(self, key: str):
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[2] < time.monotonic():
            with self._lock:
                self._entries.pop(key, None)
            return None
        return entry[0], entry[1]

    def put(self, key: str, user, token) -> None:
        seconds = settings.MASTRA_API_TOKEN_CACHE_S
        if seconds <= 0:
            return
        with self._lock:
            if len(self._entries) >= settings.MASTRA_API_TOKEN_CACHE_MAX:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = (user, token, time.monotonic() + seconds)

    def forget(self, *, key: str | None = None, user_id=None) -> None:
        with self._lock:
            if key is not None:
                self._entries.pop(key, None)
            if user_id is not None:
                for k in [k for k, entry in self._entries.items() if entry[0].pk == user_id]:
                    del self._entries[k]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


token_cache = TokenCache()


def token_cache_forget(sender, instance, **kwargs) -> None:
    """Signal receiver (``agents.apps``): a token saved or deleted, or a user saved or deleted."""
    from rest_framework.authtoken.models import Token

    if isinstance(instance, Token):
        token_cache.forget(key=instance.key)
    else:
        token_cache.forget(user_id=instance.pk)


class CachedTokenAuthentication(TokenAuthentication):
    """DRF's ``Authorization: Token <key>``, with :data:`token_cache` in front of its database read."""

    def authenticate(self, request):
        # the entry :meth:`cached_key` found, kept on the request: the checks it let run on the
        # event loop must not read the database, even when the entry expires (or is forgotten)
        # between that look and this one
        pinned = getattr(request._request, "_mastra_cached_token", None)
        if pinned is not None and pinned[0] == self.keyword.lower().encode():
            return pinned[1], pinned[2]
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        cached = token_cache.get(key)
        if cached is not None:
            return cached
        user, token = super().authenticate_credentials(key)
        token_cache.put(key, user, token)
        return user, token

    @classmethod
    def cached_key(cls, request) -> bool:
        """Whether the request carries a token (either keyword) that :data:`token_cache` holds; the
        entry found is kept on the request for its authentication."""
        parts = get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() not in (b"token", b"bearer"):
            return False
        try:
            cached = token_cache.get(parts[1].decode())
        except UnicodeError:
            return False
        if cached is None:
            return False
        request._mastra_cached_token = (parts[0].lower(), *cached)
        return True


class BearerTokenAuthentication(CachedTokenAuthentication):
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
