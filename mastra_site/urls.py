from django.contrib import admin
from django.urls import include, path, re_path

from agents.api.errors import no_route
from mastra_site import health, views

urlpatterns = [
    # HTTP API (agents.api and the inbox's inbox.urls, docs/api.md) and the webhooks that feed the
    # inbox (inbox.webhooks). First, and the agents' routes first among them: Django tries the
    # patterns in order and every include a path falls through costs a Resolver404 and its list of
    # the patterns tried, which made a send-message's resolution 4x dearer (36 -> 10 us).
    path("api/", include("agents.api.urls")),
    path("api/webhooks/", include("inbox.webhooks.urls")),
    path("api/", include("inbox.urls")),
    path("api/", include("schedules.urls")),  # mastra.schedules (docs/schedules.md)
    # the channels' webhooks (agent_channels, docs/channels.md): Slack and GitHub conversations
    path("api/", include("agent_channels.urls")),
    # the rest of /api/: no route (a JSON 404, agents.api.errors.no_route)
    re_path(r"^api/", no_route, name="api-no-route"),
    # probes for a load balancer (mastra_site.health): not under /api/, no sign-in
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    # browsers ask for /favicon.ico whatever the page links: the site's icon (a static file)
    path("favicon.ico", views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("", include("chat.urls")),  # browser chat UI: the page at /, login, its JSON
]
