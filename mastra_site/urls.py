from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # HTTP API (agents.api, docs/api.md)
    path("api/", include("agents.api.urls")),
]
