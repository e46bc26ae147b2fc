from django.urls import path

from .consumers import ThreadConsumer

websocket_urlpatterns = [
    path("ws/agents/<str:agent_id>/threads/<str:thread_id>/", ThreadConsumer.as_asgi()),
]
