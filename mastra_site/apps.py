from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class MastraAdminConfig(AdminConfig):
    """``django.contrib.admin`` whose default site shows the operator dashboard
    (``mastra_site.admin_site``)."""

    default_site = "mastra_site.admin_site.MastraAdminSite"


class MastraSiteConfig(AppConfig):
    name = "mastra_site"
    label = "mastra_site"
    verbose_name = "Site"  # the admin's heading of the API tokens (mastra_site.admin)

    def ready(self) -> None:
        from django.conf import settings

        from agents.runtime.limits import configure_limits
        from agents.runtime.providers.resilience import configure_resilience
        from mastra_site import checks  # noqa: F401  (registers the system checks)

        configure_limits(
            max_signal_bytes=settings.MASTRA_MAX_SIGNAL_BYTES, max_attributes=settings.MASTRA_MAX_SIGNAL_ATTRIBUTES,
            max_notifications_per_call=settings.MASTRA_MAX_NOTIFICATIONS_PER_CALL,
            max_pending_inputs=settings.MASTRA_MAX_PENDING_INPUTS, max_steps=settings.MASTRA_MAX_STEPS,
            max_retries=settings.MASTRA_MAX_RETRIES, keep_provider_payloads=settings.MASTRA_KEEP_PROVIDER_PAYLOADS)
        configure_resilience(
            retry_base_s=settings.MASTRA_RETRY_BASE_MS / 1000, retry_max_s=settings.MASTRA_RETRY_MAX_MS / 1000,
            retry_after_max_s=settings.MASTRA_RETRY_AFTER_MAX_MS / 1000,
            breaker_failures=settings.MASTRA_BREAKER_FAILURES,
            breaker_cooldown_s=settings.MASTRA_BREAKER_COOLDOWN_MS / 1000)
