"""The inbox's HTTP API routes, mounted at ``/api/`` beside ``agents.api.urls`` (docs/api.md)."""

from django.urls import path

from . import api

urlpatterns = [
    path("notifications", api.NotificationListView.as_view(), name="api-notifications"),
    path("notifications/<str:record_id>", api.NotificationDetailView.as_view(), name="api-notification"),
]
