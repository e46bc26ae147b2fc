"""Admin for the channels: channel threads (platform thread ↔ memory thread, with links to both),
the events received, the outbox (pending, sent, failed with the platform's error; one action,
retry) and the approval cards with every decision (who, where, what came of it). Read-only:
rows change only through the services."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from agents.admin import ReadOnlyAdmin
from agents.runtime.threads import thread_key

from .models import ChannelApproval, ChannelDecision, ChannelEvent, ChannelThread, OutboxMessage, RateLimitWait
from .outbox import outbox_retry


def platform_url(platform: str, target: dict) -> str:
    """The platform's page of a channel thread: the issue or pull request on GitHub, the thread
    in Slack's web client."""
    if platform == "github":
        return f"https://github.com/{target.get('repository', '')}/issues/{target.get('number', '')}"
    if not target.get("channel"):
        return ""
    return (f"https://app.slack.com/client/{target.get('team', '')}/{target['channel']}/thread/"
            f"{target['channel']}-{target.get('thread_ts', '')}")


@admin.register(ChannelThread)
class ChannelThreadAdmin(ReadOnlyAdmin):
    list_display = ("key", "platform", "agent_id", "memory_thread", "on_platform", "relay_open", "last_activity_at")
    list_filter = ("platform", "agent_id", "relay_open")
    search_fields = ("key", "thread_id", "resource_id")
    ordering = ("-last_activity_at",)

    @admin.display(description="memory thread")
    def memory_thread(self, obj: ChannelThread) -> str:
        url = reverse("admin:agents_thread_change", args=[thread_key(obj.resource_id, obj.thread_id)])
        return format_html('<a href="{}">{}</a>', url, obj.thread_id)

    @admin.display(description="on the platform")
    def on_platform(self, obj: ChannelThread) -> str:
        url = platform_url(obj.platform, obj.target)
        return format_html('<a href="{}" rel="noopener" target="_blank">{}</a>', url, obj.platform) if url else ""


@admin.register(ChannelEvent)
class ChannelEventAdmin(ReadOnlyAdmin):
    list_display = ("event_id", "platform", "kind", "status", "agent_id", "channel_thread", "run_id", "attempts",
                    "created_at")
    list_filter = ("status", "platform", "kind", "agent_id")
    search_fields = ("event_id", "message_key", "run_id")
    ordering = ("-created_at",)


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdmin):
    list_display = ("key", "platform", "op", "status", "attempts", "calls", "last_error", "next_attempt_at",
                    "last_sent_at")
    list_filter = ("status", "platform", "op", "agent_id")
    search_fields = ("key", "platform_ref", "last_error")
    ordering = ("-created_at",)
    actions = ("retry",)

    @admin.action(description="Retry the selected failed deliveries")
    def retry(self, request, queryset):
        count = outbox_retry(ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} failed deliverie(s) will be sent again.", messages.SUCCESS)


class ChannelDecisionInline(admin.TabularInline):
    model = ChannelDecision
    extra = 0
    fields = ("user", "where", "decision", "outcome", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ChannelApproval)
class ChannelApprovalAdmin(ReadOnlyAdmin):
    list_display = ("tool_name", "platform", "status", "requested_by", "decided_by", "decided_where", "decided_at",
                    "run_id")
    list_filter = ("status", "platform", "agent_id")
    search_fields = ("run_id", "tool_call_id", "tool_name", "decided_by")
    ordering = ("-created_at",)
    inlines = (ChannelDecisionInline,)


@admin.register(RateLimitWait)
class RateLimitWaitAdmin(ReadOnlyAdmin):
    list_display = ("platform", "bucket", "seconds", "created_at")
    list_filter = ("platform",)
    ordering = ("-created_at",)
