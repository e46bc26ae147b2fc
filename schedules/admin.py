"""Admin for schedules: the list (next fire, last outcome, paused), a form that validates the cron
and shows the next five fire times in the schedule's time zone, the pause / resume / run-now
actions and the trigger history. Every change goes through ``mastra.schedules`` (its validation,
the same services as the HTTP API); run-now claims the fire with ``services.fire_claim_manual``."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from agents.registry import get_mastra
from agents.runtime.errors import MastraError
from agents.runtime.schedules import CronError, cron_check, next_fire_times, to_ms, zone
from agents.runtime.schedules.definition import schedule_build, schedule_changes

from .models import Schedule, ScheduleTrigger
from .rows import schedule_record
from .runner import request_fire_dispatch
from .services import fire_claim_manual

HISTORY = 20
EDITABLE = ("prompt", "name", "cron", "timezone", "status", "misfire_policy", "misfire_cap")


class ScheduleForm(forms.ModelForm):
    agent_id = forms.ChoiceField(required=False, help_text="The agent this schedule fires.")

    class Meta:
        model = Schedule
        fields = ("id", "agent_id", "thread_id", "resource_id", *EDITABLE)
        help_texts = {"cron": "5 fields (minute hour day month weekday), 6 or 7 (seconds first, year last), or "
                              "@hourly, @daily, @weekly, @monthly, @yearly",
                      "id": "normalized to agent_<slug>", "thread_id": "empty: each fire runs agent.generate()"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "agent_id" in self.fields:
            self.fields["agent_id"].choices = [(a, a) for a in sorted(get_mastra().get_agents())]

    def clean(self):
        """The checks ``mastra.schedules`` makes, as form errors (the cron's and the zone's on their
        fields)."""
        data = super().clean()
        fields = schedule_fields(data)
        try:
            cron_check(data.get("cron") or "", fields["timezone"], now=timezone.now())
            if self.instance.pk and not self.instance._state.adding:
                schedule_changes(schedule_record(self.instance), fields, now_ms=to_ms(timezone.now()))
            else:
                schedule_build({"id": data.get("id") or None, "agent_id": data.get("agent_id"),
                                **thread_of(data), **fields}, now_ms=to_ms(timezone.now()))
                thread = thread_of(data)
                memory = get_mastra().get_agent(data["agent_id"]).memory
                if thread["thread_id"] and (memory is None or not async_to_sync(memory.get_thread_by_id)(**thread)):
                    raise forms.ValidationError({"thread_id": f"thread {thread['thread_id']!r} of resource "
                                                              f"{thread['resource_id']!r} not found"})
        except CronError as exc:
            raise forms.ValidationError({"timezone" if exc.code == "invalid_timezone" else "cron": exc.message})
        except MastraError as exc:
            raise forms.ValidationError(exc.message)
        return data


def schedule_fields(data: dict) -> dict:
    fields = {name: data.get(name) for name in EDITABLE}
    fields["timezone"] = fields["timezone"] or None
    fields["name"] = fields["name"] or None
    return fields


def thread_of(data: dict) -> dict:
    return {"thread_id": data.get("thread_id") or None, "resource_id": data.get("resource_id") or None}


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = ("id", "target", "cron", "timezone", "status", "next_fire_local", "last_fire_at", "last_outcome")
    list_filter = ("status", "kind", "last_outcome", "agent_id")
    search_fields = ("id", "name__icontains_folded", "agent_id", "workflow_id", "thread_id", "resource_id",
                     "prompt__icontains_folded")
    ordering = ("next_fire_at",)
    actions = ("pause", "resume", "run_now")
    list_per_page = 50

    def get_readonly_fields(self, request, obj=None):
        fixed = ("next_fires", "trigger_history", "next_fire_at", "last_fire_at", "last_run_id", "last_outcome",
                 "kind", "workflow_id", "created_by", "created_at", "updated_at")
        return fixed + (("id", "agent_id", "thread_id", "resource_id") if obj is not None else ())

    def get_fields(self, request, obj=None):
        head = ("id", "agent_id", "thread_id", "resource_id") if obj is None else (
            "id", "kind", "agent_id", "workflow_id", "thread_id", "resource_id")
        tail = () if obj is None else ("next_fires", "next_fire_at", "last_fire_at", "last_run_id", "last_outcome",
                                       "created_by", "created_at", "updated_at", "trigger_history")
        return head + EDITABLE + tail

    @admin.display(description="target")
    def target(self, obj: Schedule) -> str:
        what = obj.agent_id if obj.kind == "agent" else f"workflow {obj.workflow_id}"
        return f"{what} → {obj.resource_id}/{obj.thread_id}" if obj.thread_id else what

    @admin.display(description="next fire", ordering="next_fire_at")
    def next_fire_local(self, obj: Schedule) -> str:
        return obj.next_fire_at.astimezone(zone(obj.timezone or None)).strftime("%Y-%m-%d %H:%M:%S %Z")

    @admin.display(description="next five fire times")
    def next_fires(self, obj: Schedule) -> str:
        tz = zone(obj.timezone or None)
        try:
            times = next_fire_times(obj.cron, obj.timezone or None, timezone.now())
        except CronError as exc:
            return exc.message
        return format_html_join(mark_safe("<br>"), "{}", ((t.astimezone(tz).strftime("%a %Y-%m-%d %H:%M:%S %Z"),)
                                                              for t in times))

    @admin.display(description=f"last {HISTORY} fires")
    def trigger_history(self, obj: Schedule) -> str:
        rows = ScheduleTrigger.objects.filter(schedule=obj).order_by("-actual_fire_at", "-scheduled_fire_at")[:HISTORY]
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
            (t.scheduled_fire_at.strftime("%Y-%m-%d %H:%M:%S"), t.trigger_kind, t.outcome, t.run_id or t.claim_id,
             t.error) for t in rows))
        return format_html("<table><tr><th>scheduled</th><th>kind</th><th>outcome</th><th>run</th><th>error</th></tr>"
                           "{}</table>", body) if rows else "no fire yet"

    def save_model(self, request, obj: Schedule, form, change: bool) -> None:
        """Create or update through ``mastra.schedules`` (the form ran its checks already)."""
        data = form.cleaned_data
        schedules = get_mastra().schedules
        if change:
            async_to_sync(schedules.update)(obj.id, **schedule_fields(data))
        else:
            created = async_to_sync(schedules.create)(id=data["id"] or None, agent_id=data["agent_id"],
                                                      created_by=request.user.pk, **thread_of(data),
                                                      **schedule_fields(data))
            obj.pk = created.id

    def save_related(self, request, form, formsets, change) -> None:
        pass  # no related rows: the triggers are the scheduler's

    @admin.action(description="Pause selected schedules")
    def pause(self, request, queryset):
        for schedule_id in queryset.values_list("id", flat=True):
            async_to_sync(get_mastra().schedules.pause)(schedule_id)
        self.message_user(request, f"{queryset.count()} schedule(s) paused.", messages.SUCCESS)

    @admin.action(description="Resume selected schedules (next fire from now: no backlog)")
    def resume(self, request, queryset):
        for schedule_id in queryset.values_list("id", flat=True):
            async_to_sync(get_mastra().schedules.resume)(schedule_id)
        self.message_user(request, f"{queryset.count()} schedule(s) resumed.", messages.SUCCESS)

    @admin.action(description="Run selected schedules now (once; the cadence is unchanged)")
    def run_now(self, request, queryset):
        queued = False
        for schedule_id in queryset.values_list("id", flat=True):
            receipt = fire_claim_manual(schedule_id=schedule_id, now=timezone.now())
            if receipt is not None:
                queued = request_fire_dispatch(receipt.trigger_id)
        when = "on a worker now" if queued else "at the scheduler's next tick"
        self.message_user(request, f"{queryset.count()} schedule(s) will fire {when}.", messages.SUCCESS)
