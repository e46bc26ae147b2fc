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
        from mastra_site import checks  # noqa: F401  (registers the system checks)

        configure_limits(
            max_signal_bytes=settings.MASTRA_MAX_SIGNAL_BYTES, max_attributes=settings.MASTRA_MAX_SIGNAL_ATTRIBUTES,
            max_notifications_per_call=settings.MASTRA_MAX_NOTIFICATIONS_PER_CALL,
            max_pending_inputs=settings.MASTRA_MAX_PENDING_INPUTS, max_steps=settings.MASTRA_MAX_STEPS,
            max_retries=settings.MASTRA_MAX_RETRIES, keep_provider_payloads=settings.MASTRA_KEEP_PROVIDER_PAYLOADS)
