from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Notification inbox"

    def ready(self) -> None:
        from agents.runtime.notifications import set_notification_store

        from .store import DjangoNotificationStore

        set_notification_store(DjangoNotificationStore())
