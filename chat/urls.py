from django.urls import path

from . import api, views

urlpatterns = [
    path("", views.chat_page, name="chat"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("setup/", views.operator_setup, name="operator-setup"),
    path("chat/api/agents", api.agents_list, name="chat-agents"),
    path("chat/api/threads", api.threads, name="chat-threads"),
    path("chat/api/threads/<path:thread_id>", api.thread_detail, name="chat-thread"),
    path("chat/api/messages", api.messages, name="chat-messages"),
    path("chat/api/runs", api.runs, name="chat-runs"),
    path("chat/api/notifications", api.notifications_list, name="chat-notifications"),
    path("chat/api/notifications/read-all", api.notifications_read_all, name="chat-notifications-read-all"),
    path("chat/api/notifications/test", api.notification_test, name="chat-notification-test"),
    path("chat/api/notifications/<str:record_id>/<str:action>", api.notification_update,
         name="chat-notification-update"),
]
