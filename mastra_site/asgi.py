"""ASGI entry point: HTTP through Django, websockets through Channels; the process's background work
(thread recovery, notification dispatch) runs from the moment the server starts serving. Building the
application refuses unsafe settings (``mastra_site.checks.refuse_unsafe_start``): an ASGI server runs
no system checks of its own."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mastra_site.settings")
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application, before the imports below

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

import chat.routing  # noqa: E402

from agents.api.handler import ApiHandler, QuietDisconnectHandler, api_first  # noqa: E402
from mastra_site.autobahn_logging import plain_autobahn_log_arguments  # noqa: E402
from mastra_site.checks import refuse_unsafe_start  # noqa: E402
from mastra_site.cpu_affinity import apply_cpu_affinity  # noqa: E402
from mastra_site.daphne_requests import daphne_skips_form_parsing  # noqa: E402
from agents.heap import heap_freeze, heap_thresholds  # noqa: E402
from agents.registry import get_mastra  # noqa: E402
from agents.runtime.providers.preload import preload_models  # noqa: E402
from mastra_site.logging_context import with_request_id  # noqa: E402
from mastra_site.origins import SameOriginValidator  # noqa: E402
from mastra_site.tcp_writes import tcp_write_through  # noqa: E402
from mastra_site.websocket_auth import SessionAuthStack  # noqa: E402
from mastra_site.workers import start_with_server  # noqa: E402

refuse_unsafe_start()
# MASTRA_CPU_AFFINITY: a web process's threads hand work to one another on one CPU (mastra_site.cpu_affinity)
apply_cpu_affinity()
# autobahn colours a debug line's arguments for every websocket frame, logged or not (mastra_site.autobahn_logging)
plain_autobahn_log_arguments()
# Twisted buffers every write for the reactor's next turn; send at once when nothing waits (mastra_site.tcp_writes)
tcp_write_through()
# Twisted parses a POST's form body into args that Daphne never reads (mastra_site.daphne_requests)
daphne_skips_form_parsing()


def http_application(site=None):
    """HTTP: ``/api/`` through the API's own handler (without the site's sync middleware, but with
    the site's security policy, ``agents.api.security``), everything else through Django's handler
    and ``settings.MIDDLEWARE`` (``QuietDisconnectHandler``: Django's, without a reference cycle per
    request). Both read their settings when built (tests build one anew). Each request has a
    request id for its log lines, sent back as ``X-Request-ID``."""
    return with_request_id(api_first(site or QuietDisconnectHandler(), ApiHandler()))


application = start_with_server(ProtocolTypeRouter({
    "http": http_application(),
    # browser chat UI: session auth (mastra_site.websocket_auth), same-origin (or CSRF_TRUSTED_ORIGINS)
    # browsers only (mastra_site.origins)
    "websocket": SameOriginValidator(SessionAuthStack(URLRouter(chat.routing.websocket_urlpatterns))),
}))
# the SDKs of the site's models load now rather than on the event loop at their first call, and
# join the frozen heap (agents.runtime.providers.preload)
preload_models(get_mastra().get_agents().values())
# the application is loaded: its long-lived objects leave the collector's full walks, and the
# collector's thresholds are set for a server (agents.heap)
heap_freeze(collect=True)
heap_thresholds()
