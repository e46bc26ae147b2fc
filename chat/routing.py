"""The chat's websocket routes. A thread id may hold any character an id may (``github:acme/app``,
``owner/repo#12``): the page percent-encodes it, the server decodes the path, and the ``path``
converter takes it whole, slashes included. Any other websocket path is closed with 4404 (the page
stops retrying), never an unhandled routing error."""

from django.urls import path, re_path

from .consumers import NoSuchSocket, ThreadConsumer

websocket_urlpatterns = [
    path("ws/agents/<str:agent_id>/threads/<path:thread_id>/", ThreadConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),
]
