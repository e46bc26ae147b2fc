from django.apps import AppConfig


class ChatConfig(AppConfig):
    """The browser chat: the page at ``/``, its login, and the websocket consumer."""

    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"
