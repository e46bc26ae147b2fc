"""The channels' webhook route, mounted at ``/api/`` (Mastra's path)."""

from django.urls import path

from .views import ChannelWebhookView

urlpatterns = [
    path("agents/<str:agent_id>/channels/<str:platform>/webhook", ChannelWebhookView.as_view(),
         name="agent-channel-webhook"),
]
