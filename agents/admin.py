"""Admin for threads, runs and their runtime state.

Runtime state (the lease's owner run, fencing token and expiry, waiting inputs, the event log,
approval status) is read-only: it changes only through the thread services, which the actions call
(abort a thread's run, cancel waiting inputs), one service each.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import DurationField, ExpressionWrapper, F
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from agents.approvals import approval_decide
from agents.models import Message, Run, Thread, ThreadEvent, ThreadInput, ThreadLease, ToolApproval
from agents.observability import Score, TraceSpan
from agents.observability_services import run_scores, run_spans
from agents.runtime.errors import MastraError
from agents.threads.identity import thread_ref
from agents.threads.activity import lease_is_active
from agents.threads.inputs import queued_inputs_cancel
from agents.threads.runs import run_abort_request
from agents.trace_waterfall import USAGE_COLUMNS, duration_label, usage_rows, waterfall_build
from agents.admin_display import SHORT_ID, run_cell, short_link, shortened, with_run_stored
from agents.admin_lists import BigTableAdmin, recent_values


def _link(model: str, pk: str | None, text: str | None = None) -> str:
    if not pk:
        return "-"
    return format_html('<a href="{}">{}</a>', reverse(f"admin:agents_{model}_change", args=[pk]), text or pk)


def _thread_link(key: str | None, *, short: bool = False) -> str:
    """A link to a thread's admin page, shown as ``resource / thread id`` (``short``: a long thread
    id shortened, whole in the link's title)."""
    if not key or not short:
        return _link("thread", key, " / ".join(thread_ref(key)) if key else None)
    resource, thread = thread_ref(key)
    return short_link("thread", key, f"{resource} / {thread}", f"{resource} / {shortened(thread, SHORT_ID + 8)}")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Every field shown, none editable; rows are neither added nor deleted by hand. A field named in
    ``shown_as`` is shown as that other read-only field (a link) in its place."""

    shown_as: dict[str, str] = {}

    def get_readonly_fields(self, request, obj=None):
        names = [self.shown_as.get(f.name, f.name) for f in self.model._meta.fields]
        return names + [name for name in self.readonly_fields if name not in names]

    def get_exclude(self, request, obj=None):
        return [*(super().get_exclude(request, obj) or ()), *self.shown_as]

    def has_change_permission(self, request, obj=None) -> bool:
        # viewing only: the page is "View …" without Save buttons, and a POST to it is refused (403)
        return False

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.is_active and request.user.is_staff and (
            super().has_view_permission(request, obj) or super().has_change_permission(request, obj))

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ("message_id", "role", "type", "content", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class WaitingInputInline(admin.TabularInline):
    """The thread's inputs that no run has taken yet (cancel them from the inputs list)."""

    model = ThreadInput
    extra = 0
    fields = ("input_id", "kind", "status", "attempts", "run_id", "created_at")
    readonly_fields = fields
    can_delete = False
    verbose_name_plural = "queued inputs"

    def get_queryset(self, request):
        return super().get_queryset(request).filter(status=ThreadInput.Status.PENDING)

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Thread)
class ThreadAdmin(BigTableAdmin):
    list_display = ("thread_id", "resource_id", "title", "updated_at")
    search_fields = ("thread_id", "resource_id", "title__icontains_folded")
    readonly_fields = ("thread_id", "resource_id", "title", "metadata", "created_at", "updated_at", "lease_status",
                       "owner_run", "lease_token", "lease_expires_at", "pending_approvals")
    inlines = [MessageInline, WaitingInputInline]

    def has_change_permission(self, request, obj=None) -> bool:
        # viewing only: the thread changes through its services (the actions of the other lists)
        return False if request.method == "POST" else super().has_change_permission(request, obj)

    def has_add_permission(self, request) -> bool:
        return False  # threads are made by runs

    @admin.display(description="lease expires")
    def lease_expires_at(self, obj: Thread):
        lease = self._lease(obj)
        return lease.expires_at if lease and lease.expires_at else "-"

    @admin.display(description="pending approvals")
    def pending_approvals(self, obj: Thread) -> str:
        runs = list(obj.runs.values_list("id", flat=True))
        rows = ToolApproval.objects.filter(run_id__in=runs, status=ToolApproval.Status.PENDING)
        if not rows:
            return "-"
        url = reverse("admin:agents_toolapproval_changelist")
        return format_html('<a href="{}?status=pending&run_id__in={}">{} pending</a>', url, ",".join(runs), len(rows))

    def _lease(self, obj: Thread) -> ThreadLease | None:
        return ThreadLease.objects.filter(thread=obj).first()

    @admin.display(description="lease status")
    def lease_status(self, obj: Thread) -> str:
        lease = self._lease(obj)
        if lease is None:
            return "idle"
        return lease.status if lease_is_active(lease, timezone.now()) else "idle"

    @admin.display(description="owner run")
    def owner_run(self, obj: Thread) -> str:
        lease = self._lease(obj)
        return _link("run", lease.owner_run_id if lease else None)

    @admin.display(description="lease token")
    def lease_token(self, obj: Thread) -> int:
        lease = self._lease(obj)
        return lease.token if lease else 0


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin, BigTableAdmin):
    """A run read-only: its fields, then its token usage per step, its scores and its trace as a
    waterfall (``agents.trace_waterfall``), each span opening to its stored input and output."""

    change_form_template = "admin/agents/run/change_form.html"
    # nine columns, what an operator looks for first on the left (beside the admin's menu at 1280
    # pixels the rest scrolls): the id shortened (whole in its title; the search finds it by any
    # part), the finish reason beside the status, the error code before the error's first line, the
    # thread as ``resource / thread`` (the resource alone for a run without one), and how long the
    # run took instead of when it ended
    list_display = ("short_id", "agent_id", "status_line", "error_line", "where", "started_at", "duration", "steps",
                    "tokens")
    list_filter = ("status", recent_values("finish_reason", date_field="started_at"),
                   recent_values("error_code", date_field="started_at"),
                   recent_values("agent_id", date_field="started_at"), "started_at")
    search_fields = ("id", "resource_id", "thread__thread_id", "error__icontains_folded")
    readonly_fields = ("thread_link",)
    shown_as = {"thread": "thread_link"}

    @admin.display(description="tokens")
    def tokens(self, obj: Run) -> int:
        return int((obj.usage or {}).get("total_tokens") or 0)

    @admin.display(description="id", ordering="id")
    def short_id(self, obj: Run) -> str:
        return obj.id if len(obj.id) <= SHORT_ID else format_html('<span title="{}">{}</span>', obj.id,
                                                                  shortened(obj.id))

    @admin.display(description="thread")
    def where(self, obj: Run) -> str:
        return _thread_link(obj.thread_id, short=True) if obj.thread_id else (obj.resource_id or "-")

    @admin.display(description="status", ordering="status")
    def status_line(self, obj: Run) -> str:
        return f"{obj.status} ({obj.finish_reason})" if obj.finish_reason else obj.status

    @admin.display(description="error")
    def error_line(self, obj: Run) -> str:
        line = (obj.error or "").splitlines()[0][:120] if obj.error else ""
        return format_html("<code>{}</code> {}", obj.error_code, line) if obj.error_code else line

    @admin.display(description="took", ordering=ExpressionWrapper(
        F("finished_at") - F("started_at"), output_field=DurationField()).asc(nulls_last=True))
    def duration(self, obj: Run) -> str:
        # sorted by the time taken; a run still going has none: last with the quickest first, first
        # with the longest first, on every database (SQLite and PostgreSQL place nulls apart)
        if obj.finished_at is None or obj.started_at is None:
            return "-"
        return duration_label((obj.finished_at - obj.started_at).total_seconds() * 1000)

    @admin.display(description="thread")
    def thread_link(self, obj: Run) -> str:
        return _thread_link(obj.thread_id)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            spans = run_spans(run_id=obj.id)
            steps, totals = usage_rows(run_id=obj.id, usage=obj.usage, spans=spans)
            context.update({"waterfall": waterfall_build(spans), "scores": run_scores(run_id=obj.id),
                            "usage_steps": steps, "usage_totals": totals,
                            "usage_labels": [label for _, label in USAGE_COLUMNS]})
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)


@admin.register(Score)
class ScoreAdmin(ReadOnlyAdmin, BigTableAdmin):
    list_display = ("scorer_id", "run_link", "agent_id", "score", "created_at")
    list_filter = (recent_values("scorer_id", date_field="created_at"), recent_values("agent_id", date_field="created_at"))
    search_fields = ("run_id", "scorer_id", "thread_id", "resource_id")
    readonly_fields = ("run_link",)

    def get_queryset(self, request):
        return with_run_stored(super().get_queryset(request))

    @admin.display(description="run")
    def run_link(self, obj: Score) -> str:
        return run_cell(obj.run_id, stored=obj.run_stored)


@admin.register(TraceSpan)
class TraceSpanAdmin(ReadOnlyAdmin, BigTableAdmin):
    # what the span is, its run and how long it took first; the trace's ids after
    list_display = ("name", "type", "run_link", "took", "started_at", "trace_id", "span_id", "parent_span_id")
    list_filter = (recent_values("type", date_field="started_at"),)
    ordering = ("-started_at",)
    search_fields = ("trace_id", "span_id", "run_id", "name")

    def get_queryset(self, request):
        return with_run_stored(super().get_queryset(request))

    @admin.display(description="run", ordering="run_id")
    def run_link(self, obj: TraceSpan) -> str:
        return run_cell(obj.run_id, stored=obj.run_stored)

    @admin.display(description="took", ordering="duration_ms")
    def took(self, obj: TraceSpan) -> str:
        return "-" if obj.duration_ms is None else duration_label(obj.duration_ms)


@admin.register(ToolApproval)
class ToolApprovalAdmin(ReadOnlyAdmin):
    """Approval status is read-only: a decision resumes the run, through the agent's API."""

    list_display = ("run_link", "agent_id", "tool_name", "tool_call_id", "status", "created_at", "decided_at")
    list_filter = ("status", "tool_name", "agent_id")
    search_fields = ("run_id", "tool_name")
    readonly_fields = ("run_link",)
    actions = ("approve", "decline")

    def decide(self, request, queryset, decision: str) -> None:
        done = 0
        for approval in queryset.filter(status=ToolApproval.Status.PENDING):
            try:
                approval_decide(approval_id=approval.pk, decision=decision)
            except MastraError as exc:
                self.message_user(request, f"{approval.tool_name} in {approval.run_id}: {exc.message}", messages.ERROR)
            else:
                done += 1
        self.message_user(request, f"{done} tool call(s) {decision}.", messages.SUCCESS)

    @admin.action(description="Approve the selected tool calls (the runs continue)")
    def approve(self, request, queryset):
        self.decide(request, queryset, "approved")

    @admin.action(description="Decline the selected tool calls (the runs continue without them)")
    def decline(self, request, queryset):
        self.decide(request, queryset, "declined")

    @admin.display(description="run")
    def run_link(self, obj: ToolApproval) -> str:
        return _link("run", obj.run_id)


@admin.register(ThreadLease)
class ThreadLeaseAdmin(ReadOnlyAdmin):
    list_display = ("thread_link", "resource_id", "agent_id", "status", "active", "owner_run", "token",
                    "expires_at")
    list_filter = ("status", "agent_id")
    list_select_related = ("thread",)
    search_fields = ("thread__thread_id", "thread__resource_id", "owner_run_id")
    readonly_fields = ("thread_link", "resource_id", "active", "owner_run")
    actions = ("abort_runs",)

    @admin.display(description="thread")
    def thread_link(self, obj: ThreadLease) -> str:
        return _thread_link(obj.thread_id)

    @admin.display(description="active", boolean=True)
    def active(self, obj: ThreadLease) -> bool:
        return lease_is_active(obj, timezone.now())

    @admin.display(description="owner run")
    def owner_run(self, obj: ThreadLease) -> str:
        return _link("run", obj.owner_run_id)

    @admin.action(description="Abort the active run of the selected threads")
    def abort_runs(self, request, queryset):
        keys = list(queryset.values_list("thread_id", flat=True))  # a lease's thread_id is the thread key
        aborted = [outcome for key in keys if (outcome := run_abort_request(key=key)) is not None]
        self.message_user(request, f"{len(aborted)} run(s) asked to abort.", messages.SUCCESS)


@admin.register(ThreadInput)
class ThreadInputAdmin(ReadOnlyAdmin, BigTableAdmin):
    list_display = ("input_id", "thread_link", "agent_id", "kind", "status", "attempts", "run_id", "consumed_by",
                    "created_at")
    list_filter = ("status", "kind", "agent_id")
    search_fields = ("input_id", "thread__thread_id", "thread__resource_id")
    readonly_fields = ("thread_link",)
    actions = ("cancel_inputs",)

    @admin.display(description="thread")
    def thread_link(self, obj: ThreadInput) -> str:
        return _thread_link(obj.thread_id)

    @admin.action(description="Cancel the selected waiting inputs")
    def cancel_inputs(self, request, queryset):
        count = queued_inputs_cancel(key=None, ids=list(queryset.values_list("input_id", flat=True)))
        self.message_user(request, f"{count} input(s) cancelled.", messages.SUCCESS)


@admin.register(ThreadEvent)
class ThreadEventAdmin(ReadOnlyAdmin, BigTableAdmin):
    list_display = ("thread_short", "seq", "chunk_type", "run_link", "created_at")
    search_fields = ("thread__thread_id", "run_id")
    readonly_fields = ("thread_link",)

    @admin.display(description="thread")
    def thread_link(self, obj: ThreadEvent) -> str:
        return _thread_link(obj.thread_id)

    @admin.display(description="thread", ordering="thread_id")
    def thread_short(self, obj: ThreadEvent) -> str:
        return _thread_link(obj.thread_id, short=True)

    @admin.display(description="chunk")
    def chunk_type(self, obj: ThreadEvent) -> str:
        chunk = obj.chunk if isinstance(obj.chunk, dict) else {}
        return chunk.get("type") or "-"

    @admin.display(description="run", ordering="run_id")
    def run_link(self, obj: ThreadEvent) -> str:
        return short_link("run", obj.run_id)


# the agent editor's pages (agents.editor.admin registers them)
from agents.editor import admin as editor_admin  # noqa: E402,F401
