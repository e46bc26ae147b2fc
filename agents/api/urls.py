"""Routes of the HTTP API, mounted at ``/api/`` (DESIGN §5, docs/api.md)."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from . import agents, approvals, memory, signals, threads, voice
from .openapi import ApiDocsView

agent = "agents/<str:agent_id>"

urlpatterns = [
    path("agents", agents.AgentListView.as_view(), name="api-agents"),
    path(f"{agent}", agents.AgentDetailView.as_view(), name="api-agent"),
    path(f"{agent}/generate", agents.GenerateView.as_view(), name="api-generate"),
    path(f"{agent}/stream", agents.StreamView.as_view(), name="api-stream"),
    path(f"{agent}/send-message", signals.SendMessageView.as_view(), name="api-send-message"),
    path(f"{agent}/queue-message", signals.QueueMessageView.as_view(), name="api-queue-message"),
    path(f"{agent}/signals", signals.SignalView.as_view(), name="api-signals"),
    path(f"{agent}/state-signals", signals.StateSignalView.as_view(), name="api-state-signals"),
    path(f"{agent}/notifications", signals.NotificationSignalView.as_view(), name="api-agent-notifications"),
    path(f"{agent}/threads/subscribe", threads.SubscribeView.as_view(), name="api-subscribe"),
    path(f"{agent}/threads/abort", threads.AbortView.as_view(), name="api-abort"),
    path(f"{agent}/threads/queue", threads.QueueView.as_view(), name="api-queue"),
    path(f"{agent}/threads/queue/cancel", threads.QueueCancelView.as_view(), name="api-queue-cancel"),
    path(f"{agent}/send-tool-approval", approvals.SendToolApprovalView.as_view(), name="api-send-tool-approval"),
    path(f"{agent}/approve-tool-call", approvals.ApproveToolCallView.as_view(), name="api-approve"),
    path(f"{agent}/decline-tool-call", approvals.DeclineToolCallView.as_view(), name="api-decline"),
    path(f"{agent}/approve-tool-call-generate", approvals.ApproveToolCallGenerateView.as_view(),
         name="api-approve-generate"),
    path(f"{agent}/decline-tool-call-generate", approvals.DeclineToolCallGenerateView.as_view(),
         name="api-decline-generate"),
    path(f"{agent}/voice/speakers", voice.SpeakersView.as_view(), name="api-voice-speakers"),
    path(f"{agent}/voice/listener", voice.ListenerView.as_view(), name="api-voice-listener"),
    path(f"{agent}/voice/speak", voice.SpeakView.as_view(), name="api-voice-speak"),
    path(f"{agent}/voice/listen", voice.ListenView.as_view(), name="api-voice-listen"),
    # Mastra's deprecated names of the same routes
    path(f"{agent}/speakers", voice.SpeakersAliasView.as_view(), name="api-speakers"),
    path(f"{agent}/speak", voice.SpeakAliasView.as_view(), name="api-speak"),
    path(f"{agent}/listen", voice.ListenAliasView.as_view(), name="api-listen"),
    path("memory/threads", memory.ThreadListView.as_view(), name="api-threads"),
    path("memory/threads/<str:thread_id>", memory.ThreadDetailView.as_view(), name="api-thread"),
    path("memory/threads/<str:thread_id>/messages", memory.MessageListView.as_view(), name="api-messages"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
]
