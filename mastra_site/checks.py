"""System checks that refuse unsafe settings (DESIGN §6, docs/security.md).

``mastra.E004``/``E005`` run with every check (``runserver``, ``migrate``, ``check``) and when the
ASGI application is built (:func:`refuse_unsafe_start`, called by ``mastra_site.asgi``), so no
server answers a public host with ``DEBUG`` on or the known development key. ``manage.py check
--deploy`` adds ``mastra.E001``/``E002`` for any production process.
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
