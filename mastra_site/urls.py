from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("chat.urls")),  # browser chat UI: the page at /, login, its JSON
    # HTTP API (agents.api, docs/api.md) and the webhooks that feed the inbox (inbox.webhooks)
    path("api/webhooks/", include("inbox.webhooks.urls")),
    path("api/", include("agents.api.urls")),
]
