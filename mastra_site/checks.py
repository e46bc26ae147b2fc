"""System checks that refuse unsafe settings (DESIGN §6, docs/security.md).

``mastra.E004``/``E005`` run with every check (``runserver``, ``migrate``, ``check``) and when the
ASGI application is built (:func:`refuse_unsafe_start`, called by ``mastra_site.asgi``), so no
server answers a public host with ``DEBUG`` on or the known development key. ``manage.py check
--deploy`` adds ``mastra.E001``/``E002`` for any production process. ``mastra.E003``, ``E006`` to
``E008`` and ``W002`` refuse a process layout the settings cannot serve (several processes on what
links only one, docs/security.md).
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured


def public_hosts() -> list[str]:
    """The allowed hosts that something other than this machine can reach (``*`` included)."""
    from mastra_site.settings import is_loopback_host

    return [host for host in settings.ALLOWED_HOSTS if not is_loopback_host(host)]


@register(Tags.security, deploy=True)
def check_production_settings(app_configs, **kwargs):
    errors = []
    from mastra_site.settings import DEFAULT_SECRET_KEY

    if settings.DEBUG:
        errors.append(Error("DEBUG is on", hint="Set DEBUG=false in production.", id="mastra.E001"))
    if settings.SECRET_KEY == DEFAULT_SECRET_KEY:
        errors.append(Error("SECRET_KEY is the development default", hint="Set SECRET_KEY to a long random value.",
                            id="mastra.E002"))
    return errors


@register(Tags.security)
def check_public_serving(app_configs, **kwargs):
    """A public host (anything but loopback in ALLOWED_HOSTS) needs DEBUG off and a key of its own."""
    from mastra_site.settings import DEFAULT_SECRET_KEY

    hosts = public_hosts()
    if not hosts:
        return []
    errors = []
    if settings.DEBUG:
        errors.append(Error(f"DEBUG is on while ALLOWED_HOSTS lets other machines in ({', '.join(hosts)})",
                            hint="Set DEBUG=false, or keep ALLOWED_HOSTS to localhost.", id="mastra.E004"))
    if settings.SECRET_KEY == DEFAULT_SECRET_KEY:
        errors.append(Error(f"SECRET_KEY is the development default while ALLOWED_HOSTS lets other machines in "
                            f"({', '.join(hosts)})", hint="Set SECRET_KEY to a long random value.",
                            id="mastra.E005"))
    return errors


def refuse_unsafe_start() -> None:
    """Raise ``ImproperlyConfigured`` listing every error of :func:`check_public_serving` (an ASGI
    server such as daphne runs no system checks of its own)."""
    errors = check_public_serving(None)
    if errors:
        raise ImproperlyConfigured("; ".join(f"{e.id}: {e.msg}. {e.hint}" for e in errors))


@register()
def check_channel_layer(app_configs, **kwargs):
    """The in-memory channel layer cannot link processes: refuse it when several are configured."""
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    processes = settings.WEB_CONCURRENCY
    if backend.endswith("InMemoryChannelLayer") and processes > 1:
        return [Error("the in-memory channel layer cannot serve several processes",
                      hint="Set REDIS_URL so that channels-redis links the processes.", id="mastra.E003")]
    if backend.endswith("InMemoryChannelLayer") and not settings.DEBUG and not settings.LOOPBACK_ONLY:
        return [Warning("the in-memory channel layer is only for one process",
                        hint="Set REDIS_URL in production.", id="mastra.W001")]
    return []


#: seconds between the chat page's ``ping`` frames (chat/static/chat/socket.js)
CHAT_PING_S = 25


def celery_has_broker() -> bool:
    """Tasks leave the process: Celery workers are processes of their own."""
    return bool(settings.CELERY_BROKER_URL) and not settings.CELERY_TASK_ALWAYS_EAGER


@register()
def check_process_layout(app_configs, **kwargs):
    """Several serving processes, or Celery workers, need a shared database and a channel layer that
    links them; several serving processes need a broker (``mastra.E003`` is the in-memory layer
    with several serving processes)."""
    errors = []
    processes = settings.WEB_CONCURRENCY
    broker = celery_has_broker()
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    who = " and ".join(part for part in (f"WEB_CONCURRENCY={processes}" if processes > 1 else "",
                                         "Celery workers (a broker is set)" if broker else "") if part)
    if who and settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        errors.append(Error(f"the SQLite database cannot serve several processes ({who})",
                            hint="Set DATABASE_URL to PostgreSQL, or run one process without a broker.",
                            id="mastra.E006"))
    if broker and backend.endswith("InMemoryChannelLayer"):
        errors.append(Error("the in-memory channel layer cannot reach the Celery workers' runs "
                            "(CELERY_BROKER_URL is set without REDIS_URL)",
                            hint="Set REDIS_URL so that channels-redis links the processes.", id="mastra.E007"))
    if settings.CELERY_TASK_ALWAYS_EAGER and processes > 1:
        errors.append(Error(f"Celery tasks run eagerly in each of the WEB_CONCURRENCY={processes} processes "
                            "(no broker: every process dispatches the due notifications itself)",
                            hint="Set REDIS_URL (or CELERY_BROKER_URL) and run a Celery worker and beat.",
                            id="mastra.E008"))
    return errors


@register()
def check_channel_expiry(app_configs, **kwargs):
    """A channel message of the list-based layer must outlive the quietest websocket's silence."""
    layer = settings.CHANNEL_LAYERS.get("default", {})
    expiry = layer.get("CONFIG", {}).get("expiry")
    if not layer.get("BACKEND", "").endswith("core.RedisChannelLayer") or expiry is None:
        return []
    keepalive = max(CHAT_PING_S, settings.MASTRA_API_KEEPALIVE_S)
    if expiry >= keepalive:
        return []
    return [Warning(f"channel messages expire after {expiry} s (MASTRA_CHANNEL_EXPIRY_S), before the "
                    f"{keepalive} s keep-alive of a quiet connection",
                    hint=f"Set MASTRA_CHANNEL_EXPIRY_S to {keepalive} or more (the chat page pings every "
                         f"{CHAT_PING_S} s; MASTRA_API_KEEPALIVE_S={settings.MASTRA_API_KEEPALIVE_S}).",
                    id="mastra.W002")]
