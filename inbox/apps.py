from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    default_auto_field = "django.db.models.BigAutoField"
