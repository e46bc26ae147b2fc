"""Webhook routes, mounted at ``/api/webhooks/``."""

from django.urls import path

from .views import GitHubWebhookView, SlackWebhookView

urlpatterns = [
    path("github/<str:name>", GitHubWebhookView.as_view(), name="webhook-github"),
    path("slack/<str:name>", SlackWebhookView.as_view(), name="webhook-slack"),
]
