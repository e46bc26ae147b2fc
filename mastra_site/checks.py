"""System checks that refuse unsafe production settings (DESIGN §6).

``manage.py check --deploy`` reports them; they also run at start-up, where DEBUG off marks a
production process.
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


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


@register()
def check_channel_layer(app_configs, **kwargs):
    """The in-memory channel layer cannot link processes: refuse it when several are configured."""
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    processes = settings.WEB_CONCURRENCY
    if backend.endswith("InMemoryChannelLayer") and processes > 1:
        return [Error("the in-memory channel layer cannot serve several processes",
                      hint="Set REDIS_URL so that channels-redis links the processes.", id="mastra.E003")]
    if backend.endswith("InMemoryChannelLayer") and not settings.DEBUG:
        return [Warning("the in-memory channel layer is only for one process",
                        hint="Set REDIS_URL in production.", id="mastra.W001")]
    return []
