"""Admin for notification records: filters by status, priority, the last week's sources and the
creation date, search by thread (a table that grows: ``mastra_site.admin_lists``); thin actions that
call one service each (dismiss, archive, deliver now). Webhook endpoints: a secret is write-only
(no page renders it; the change form sets a new one)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from mastra_site.admin_lists import BigTableAdmin, recent_values

from .models import NotificationRecord, WebhookDelivery, WebhookEndpoint
from .services import notification_archive, notification_dismiss, notifications_deliver_now
from .tasks import request_dispatch


@admin.register(NotificationRecord)
class NotificationRecordAdmin(BigTableAdmin):
    list_display = ("id", "source", "kind", "priority", "status", "short_summary", "resource_id", "thread", "coalesced_count",
                    "delivery_attempts", "next_due_at", "created_at")
    # no filter listing every thread (search by thread id instead), sources of the last week only
    list_filter = ("status", "priority", recent_values("source", date_field="created_at"), "created_at")
    list_select_related = ("thread",)
    search_fields = ("id", "summary", "source", "kind", "thread__thread_id", "resource_id", "dedupe_key", "coalesce_key")
    ordering = ("-created_at",)
    readonly_fields = [f.name for f in NotificationRecord._meta.fields]
    actions = ("dismiss", "archive", "deliver_now")
    list_per_page = 50

    def has_add_permission(self, request) -> bool:
        return False  # records come from send_notification_signal and webhooks

    @admin.display(description="summary")
    def short_summary(self, obj: NotificationRecord) -> str:
        return obj.summary if len(obj.summary) <= 80 else obj.summary[:77] + "..."

    @admin.action(description="Dismiss selected notifications")
    def dismiss(self, request, queryset):
        count = notification_dismiss(ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{count} notification(s) dismissed.", messages.SUCCESS)

    @admin.action(description="Archive selected notifications")
    def archive(self, request, queryset):
        count = notification_archive(ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{count} notification(s) archived.", messages.SUCCESS)

    @admin.action(description="Deliver selected notifications now")
    def deliver_now(self, request, queryset):
        count = notifications_deliver_now(ids=list(queryset.values_list("id", flat=True)))
        queued = request_dispatch()
        when = "now" if queued else "at the next dispatch (in-process scheduler)"
        self.message_user(request, f"{count} notification(s) will be delivered {when}.", messages.SUCCESS)


class WebhookEndpointForm(forms.ModelForm):
    """The endpoint without its secret: ``new_secret`` (never filled in) replaces the stored one when
    given; required for a new endpoint, left empty to keep the secret."""

    new_secret = forms.CharField(
        label="New secret", required=False, max_length=WebhookEndpoint._meta.get_field("secret").max_length,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="GitHub webhook secret or Slack signing secret. The stored secret is never shown: "
                  "type a new one to replace it, leave empty to keep it.")

    class Meta:
        model = WebhookEndpoint
        exclude = ("secret",)

    def clean_new_secret(self) -> str:
        secret = self.cleaned_data["new_secret"]
        if not secret and not self.instance.secret:
            raise forms.ValidationError("This field is required.", code="required")
        if secret:
            self.instance.secret = secret
        return secret


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    """Endpoints are edited here: source, secret, the agent and the thread routing, priority rules.
    The secret is write-only: pages show whether one is set, and only a user who may change the
    endpoint gets the field that sets a new one."""

    form = WebhookEndpointForm
    list_display = ("name", "source", "agent_id", "resource_id", "thread_template", "secret_status", "enabled",
                    "updated_at")
    list_filter = ("source", "enabled")
    search_fields = ("name", "agent_id", "resource_id")
    fields = ("name", "source", "secret_status", "new_secret", "agent_id", "resource_id", "thread_template",
              "priority_rules", "mention_name", "enabled")
    readonly_fields = ("secret_status",)

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        if obj is not None and not self.has_change_permission(request, obj):
            fields = [name for name in fields if name != "new_secret"]
        return fields

    @admin.display(description="secret")
    def secret_status(self, obj: WebhookEndpoint | None) -> str:
        return "set" if obj is not None and obj.secret else "not set"


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """What each endpoint received (read-only): the delivery id, the event and what it became."""

    list_display = ("delivery_id", "endpoint", "event", "outcome", "received_at")
    list_filter = ("outcome", "endpoint")
    search_fields = ("delivery_id", "event")
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
