from django.urls import path

from . import api, views

urlpatterns = [
    path("", views.chat_page, name="chat"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("setup/", views.operator_setup, name="operator-setup"),
    path("chat/api/agents", api.agents_list, name="chat-agents"),
    path("chat/api/threads", api.threads, name="chat-threads"),
    path("chat/api/notifications", api.notifications_list, name="chat-notifications"),
    path("chat/api/notifications/<str:record_id>/<str:action>", api.notification_update,
         name="chat-notification-update"),
]
