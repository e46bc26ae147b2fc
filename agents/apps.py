from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.runtime.storage import set_run_store
        from agents.runtime.threads import set_thread_runtime_factory
        from agents.store import DjangoStore

        set_run_store(DjangoStore())
        set_thread_runtime_factory(build_thread_runtime)
        install_otel_exporter()
        # the admin editor: code agents → definitions after every migrate (agents.editor.sync)
        from django.db.models.signals import post_migrate

        from agents.editor.sync import sync_after_migrate

        post_migrate.connect(sync_after_migrate, sender=self, dispatch_uid="agents.editor.sync")
        # SQLite's search folds every alphabet (agents.text_search)
        from django.db.backends.signals import connection_created

        from agents.text_search import register_sqlite_functions

        connection_created.connect(register_sqlite_functions, dispatch_uid="agents.text_search")
        # the trace writer stores what it holds at a clean exit (atexit) and when a Celery worker's
        # pool process ends (it may leave with os._exit, which runs no atexit handler)
        from celery.signals import worker_process_shutdown

        from agents.observability_services import spans_writer_shutdown

        worker_process_shutdown.connect(spans_writer_shutdown, dispatch_uid="agents.trace_writer")
        # the API's token cache forgets a token deleted or changed, and a user changed, at once: on
        # the models and their proxies (the admin's API tokens are a proxy of DRF's), since a
        # signal's sender is the class the instance was saved or deleted as
        from django.apps import apps
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save
        from rest_framework.authtoken.models import Token

        from agents.api.auth import token_cache_forget

        for model in apps.get_models():
            if issubclass(model, (Token, get_user_model())):
                for signal in (post_save, post_delete):
                    signal.connect(token_cache_forget, sender=model,
                                   dispatch_uid=f"agents.token_cache.{model._meta.label}")
        # what the process loaded to get here lives as long as it: out of the collector's walks
        from agents.heap import heap_freeze

        heap_freeze()


def install_otel_exporter():
    """Export run traces over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (off by default);
    returns the exporter or None."""
    from agents.runtime.tracing import add_trace_exporter
    from agents.runtime.tracing.otel import otel_exporter_from_env

    exporter = otel_exporter_from_env()
    return add_trace_exporter(exporter) if exporter is not None else None


def site_is_one_process(pubsub) -> bool:
    """No channel layer between processes, no Celery workers and one serving process: the layout
    the site's checks leave to a single process (``mastra.E003``, ``E006`` to ``E008``)."""
    from django.conf import settings

    celery_workers = bool(getattr(settings, "CELERY_BROKER_URL", None)) and not getattr(
        settings, "CELERY_TASK_ALWAYS_EAGER", False)
    return pubsub is None and not celery_workers and getattr(settings, "WEB_CONCURRENCY", 1) <= 1


def build_thread_runtime():
    """The process's thread runtime: leases and inputs in the database, pub/sub on the channel layer
    (none with the in-memory layer, which cannot leave the process anyway)."""
    from channels.layers import DEFAULT_CHANNEL_LAYER, InMemoryChannelLayer, channel_layers, get_channel_layer
    from django.conf import settings

    from agents.threads.pubsub import ChannelLayerPubSub
    from agents.threads.store import DjangoThreadStore
    from agents.registry import get_mastra
    from agents.runtime.threads import ThreadRuntime

    layer = get_channel_layer()
    if layer is None or isinstance(layer, InMemoryChannelLayer):
        pubsub = None
    else:
        # a layer of its own: the runtime lives on one event loop, and a shared layer's receive
        # state must not outlive (or cross) the loop it was used on
        pubsub = ChannelLayerPubSub(channel_layers.make_backend(DEFAULT_CHANNEL_LAYER))
    return ThreadRuntime(DjangoThreadStore(), pubsub, lease_ttl_ms=settings.MASTRA_THREAD_LEASE_TTL_MS,
                         agent_lookup=lambda agent_id: get_mastra().get_agent(agent_id),
                         registry_agent_ids=lambda: list(get_mastra().get_agents()),
                         single_process=site_is_one_process(pubsub),
                         accepts_at_once=settings.MASTRA_ACCEPTS_AT_ONCE)
