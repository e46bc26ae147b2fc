"""The per-user rate of everything that sends into a thread (``MASTRA_API_SEND_RATE``): the HTTP
send routes (DRF's ``ScopedRateThrottle``, scope :data:`SEND_SCOPE`) and the chat websocket's
``send-message`` / ``queue-message`` frames count against one bucket per user, the throttle's own
cache key (``throttle_agent-send_<user pk>`` in the default cache)."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from rest_framework.exceptions import Throttled
from rest_framework.throttling import ScopedRateThrottle

from agents.runtime.errors import MastraError

logger = logging.getLogger(__name__)

#: the throttle scope of the send routes (``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``)
SEND_SCOPE = "agent-send"


_rate_cache: tuple[dict, BaseCache] | None = None


def rate_cache() -> BaseCache:
    """The default cache as the throttles use it: one instance for the process (made again when the
    ``CACHES`` setting changes). ``django.core.cache.caches`` keeps one instance per thread and
    async context, and every request is a context of its own: on Redis each request's count built
    a new connection pool and opened a new connection (a TCP connect and a handshake), measured as
    a fifth of the worker thread's time in an HTTP send on PostgreSQL and Redis. Both backends the
    site uses are safe to share between threads (Redis through its connection pool, local memory
    under its lock)."""
    global _rate_cache
    config = settings.CACHES["default"]
    shared = _rate_cache
    if shared is None or shared[0] is not config:
        shared = _rate_cache = (config, caches.create_connection("default"))
    return shared[1]


class SendRateExceeded(MastraError):
    """A send over the user's rate: the HTTP 429's code and message; ``wait`` the seconds until
    the next send is allowed (None when the throttle cannot tell)."""

    code = "throttled"

    def __init__(self, wait: float | None):
        super().__init__(str(Throttled(wait).detail))
        self.wait = wait


class SendRateThrottle(ScopedRateThrottle):
    """DRF's scoped throttle that lets a request through when its cache cannot be reached (Redis
    down): the rate is a guard, and a send refused with a 5xx is one a client retries, storing it
    twice once the outage ends. The outage is logged once (with the error), then at debug level
    until the cache answers again."""

    failing = False
    #: one count at a time in this process: DRF's throttle reads the history, then writes it back;
    #: an HTTP send may count on the event loop (``ApiView.checks_cached``, a cache in memory) while
    #: a websocket frame counts on the worker thread, and neither may lose the other's count
    counting = threading.Lock()

    @property
    def cache(self) -> BaseCache:  # DRF's throttles read ``self.cache`` (a class attribute there)
        return rate_cache()

    def allow_request(self, request, view) -> bool:
        try:
            with self.counting:
                allowed = super().allow_request(request, view)
        except Exception:
            cls = type(self)
            logger.log(logging.DEBUG if cls.failing else logging.WARNING,
                       "the rate cache failed: sends are not counted until it is back", exc_info=True)
            cls.failing = True
            return True
        type(self).failing = False
        return allowed


def send_rate_count(user) -> None:
    """Count one send of the signed-in ``user`` against the send routes' bucket, exactly as DRF's
    throttle counts an HTTP send; raises :class:`SendRateExceeded` (nothing counted) when the bucket
    is full. Sync: the bucket is a cache read and write."""
    throttle = SendRateThrottle()
    request = SimpleNamespace(user=user)  # all the throttle reads of an authenticated request
    view = SimpleNamespace(throttle_scope=SEND_SCOPE)
    if not throttle.allow_request(request, view):
        raise SendRateExceeded(throttle.wait())
