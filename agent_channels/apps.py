from django.apps import AppConfig


class AgentChannelsConfig(AppConfig):
    name = "agent_channels"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Channels (Slack, GitHub)"
