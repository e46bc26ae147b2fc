from django.contrib import admin

from agents.models import Message, Run, Thread, ThreadEvent, ThreadInput, ThreadLease, ToolApproval


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ("message_id", "role", "type", "content", "created_at")
    readonly_fields = fields
    can_delete = False


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ("id", "resource_id", "title", "updated_at")
    search_fields = ("id", "resource_id", "title")
    inlines = [MessageInline]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "agent_id", "thread_id", "status", "finish_reason", "started_at", "finished_at")
    list_filter = ("status", "finish_reason", "agent_id")
    search_fields = ("id", "thread_id", "resource_id")


@admin.register(ToolApproval)
class ToolApprovalAdmin(admin.ModelAdmin):
    list_display = ("run_id", "tool_name", "tool_call_id", "status", "created_at", "decided_at")
    list_filter = ("status", "tool_name")
    readonly_fields = ("state",)


@admin.register(ThreadLease)
class ThreadLeaseAdmin(admin.ModelAdmin):
    list_display = ("thread_id", "resource_id", "agent_id", "status", "owner_run_id", "token", "expires_at")
    list_filter = ("status", "agent_id")
    search_fields = ("thread_id", "resource_id", "owner_run_id")


@admin.register(ThreadInput)
class ThreadInputAdmin(admin.ModelAdmin):
    list_display = ("input_id", "thread_id", "kind", "status", "run_id", "consumed_by", "created_at")
    list_filter = ("kind", "status", "agent_id")
    search_fields = ("input_id", "thread_id", "resource_id")


@admin.register(ThreadEvent)
class ThreadEventAdmin(admin.ModelAdmin):
    list_display = ("thread_key", "seq", "run_id", "created_at")
    search_fields = ("thread_key", "run_id")
