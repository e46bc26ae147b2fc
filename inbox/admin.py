"""Admin for notification records: filters by status, priority, the last week's sources and the
creation date, search by thread (a table that grows: ``agents.admin_lists``); thin actions that
call one service each (dismiss, archive, deliver now). Webhook endpoints: a secret is write-only
(no page renders it; the change form sets a new one or generates one in the browser); refused
requests are listed with their reason."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Sum

from agents.admin_lists import BigTableAdmin, recent_values

from .endpoint_rules import DEFAULT_PRIORITIES, PRIORITIES, TEMPLATE_FIELDS, priority_rules_problem
from .models import NotificationRecord, WebhookDelivery, WebhookEndpoint, WebhookRefusal
from .services import notification_archive, notification_dismiss, notifications_deliver_now
from .tasks import request_dispatch
from .webhooks.endpoints import (agent_problem, endpoint_agents, endpoint_owners, endpoint_path, endpoint_url,
                                 owner_problem)


@admin.register(NotificationRecord)
class NotificationRecordAdmin(BigTableAdmin):
    list_display = ("id", "source", "kind", "priority", "status", "short_summary", "resource_id", "thread", "coalesced_count",
                    "delivery_attempts", "next_due_at", "created_at")
    # no filter listing every thread (search by thread id instead), sources of the last week only
    list_filter = ("status", "priority", recent_values("source", date_field="created_at"), "created_at")
    list_select_related = ("thread",)
    search_fields = ("id", "summary__icontains_folded", "source", "kind", "thread__thread_id", "resource_id", "dedupe_key", "coalesce_key")
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


def priority_rule_field(kind: str) -> forms.ChoiceField:
    """One kind's priority: the sender's default, or a priority that replaces it."""
    senders = [source for source, kinds in DEFAULT_PRIORITIES.items() if kind in kinds]
    defaults = ", ".join(f"{SOURCE_LABELS[source]}: {DEFAULT_PRIORITIES[source][kind]}" for source in senders)
    return forms.ChoiceField(
        label=f"Priority of {kind}", required=False, choices=[("", f"default ({defaults})")] + [
            (p, p) for p in PRIORITIES],
        help_text=f"Sent by {' and '.join(SOURCE_LABELS[s] for s in senders)}.")


SOURCE_LABELS = {"github": "GitHub", "slack": "Slack"}
#: the form field of each kind's priority rule
RULE_FIELDS = {f"priority_{kind.replace('-', '_')}": kind for kind in
               dict.fromkeys(kind for kinds in DEFAULT_PRIORITIES.values() for kind in kinds)}


class WebhookEndpointForm(forms.ModelForm):
    """The endpoint without its secret: ``new_secret`` (never filled in) replaces the stored one when
    given; required for a new endpoint, left empty to keep the secret. The agent and the owner are
    chosen from the site's agents (with memory) and its users; the priority rules are one choice per
    kind. Everything is checked on save (``inbox.webhooks.endpoints``), not at the first delivery."""

    new_secret = forms.CharField(
        label="New secret", required=False, max_length=WebhookEndpoint._meta.get_field("secret").max_length,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="GitHub: generate one and paste it into the webhook's Secret. Slack: paste the app's Signing "
                  "Secret (Basic Information). The stored secret is never shown: type or generate a new one to "
                  "replace it, leave empty to keep it.")
    agent_id = forms.ChoiceField(label="Agent", help_text="The agent whose threads get the notifications (agents "
                                                          "without memory cannot take them and are not listed).")
    resource_id = forms.ChoiceField(label="Owner", help_text="The user who owns the threads and the notifications "
                                                             "(their chat shows them).")
    priority_ci_status = priority_rule_field("ci-status")
    priority_review_comment = priority_rule_field("review-comment")
    priority_mention = priority_rule_field("mention")
    priority_direct_message = priority_rule_field("direct-message")

    class Meta:
        model = WebhookEndpoint
        exclude = ("secret", "priority_rules")
        help_texts = {
            "thread_template": "The thread each notification goes to. Placeholders: " + ", ".join(
                "{%s}" % name for name in TEMPLATE_FIELDS) + " (empty when the event has none), e.g. "
                "github:{repository} or slack:{channel}.",
            "mention_name": "GitHub login: a comment naming @login becomes a mention.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        agents = endpoint_agents()
        owners = endpoint_owners()
        current_agent, current_owner = self.instance.agent_id, self.instance.resource_id
        agent_choices = list(agents.items())
        if current_agent and current_agent not in agents:
            agent_choices.insert(0, (current_agent, f"{current_agent} (not an agent with memory on this site)"))
        owner_choices = [(owner, owner) for owner in owners]
        if current_owner and current_owner not in owners:
            owner_choices.insert(0, (current_owner, f"{current_owner} (no such active user)"))
        blank = [("", "---------")]
        self.fields["agent_id"].choices = blank + agent_choices
        self.fields["resource_id"].choices = blank + owner_choices
        for name, kind in RULE_FIELDS.items():
            self.fields[name].initial = (self.instance.priority_rules or {}).get(kind, "")

    def clean_new_secret(self) -> str:
        secret = self.cleaned_data["new_secret"].strip()
        if not secret and not self.instance.secret:
            raise forms.ValidationError("This field is required.", code="required")
        if secret:
            self.instance.secret = secret
        return secret

    def clean_agent_id(self) -> str:
        problem = agent_problem(self.cleaned_data["agent_id"])
        if problem:
            raise forms.ValidationError(problem, code="unknown_agent")
        return self.cleaned_data["agent_id"]

    def clean_resource_id(self) -> str:
        problem = owner_problem(self.cleaned_data["resource_id"])
        if problem:
            raise forms.ValidationError(problem, code="unknown_owner")
        return self.cleaned_data["resource_id"]

    def clean(self):
        data = super().clean()
        source = data.get("source")
        rules = {}
        for name, kind in RULE_FIELDS.items():
            priority = data.get(name)
            if priority:
                rules[kind] = priority
                if source and kind not in DEFAULT_PRIORITIES.get(source, {}):
                    self.add_error(name, f"{SOURCE_LABELS.get(source, source)} sends no {kind} notifications: "
                                         f"leave it on the default.")
        if source and not any(name in self.errors for name in RULE_FIELDS):
            problem = priority_rules_problem(rules, source)
            if problem:
                raise forms.ValidationError(problem, code="invalid_rules")
            self.instance.priority_rules = rules
        return data


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    """Endpoints are edited here: source, secret, the agent and its owner, the thread routing, the
    priority rules. The page shows the full URL to paste into the sender, and the endpoint's latest
    deliveries and refusals. The secret is write-only: pages show whether one is set, and only a
    user who may change the endpoint gets the field that sets a new one."""

    form = WebhookEndpointForm
    change_form_template = "admin/inbox/webhookendpoint/change_form.html"
    list_display = ("name", "source", "webhook_path", "agent_id", "resource_id", "thread_template", "secret_status",
                    "enabled", "updated_at")
    list_filter = ("source", "enabled")
    search_fields = ("name", "agent_id", "resource_id")
    fieldsets = (
        (None, {"fields": ("name", "source", "enabled")}),
        ("Secret", {"fields": ("secret_status", "new_secret")}),
        ("Where notifications go", {"fields": ("agent_id", "resource_id", "thread_template", "mention_name")}),
        ("Priority rules", {"fields": tuple(RULE_FIELDS),
                            "description": "The priority each kind of notification gets: low and medium wait "
                                           "for an idle thread or are summarised, high and urgent are delivered "
                                           "at once (docs/notifications.md)."}),
    )
    readonly_fields = ("secret_status",)

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None and not self.has_change_permission(request, obj):
            fieldsets = [(title, {**options, "fields": tuple(f for f in options["fields"] if f != "new_secret")})
                         for title, options in fieldsets]
        return fieldsets

    @admin.display(description="secret")
    def secret_status(self, obj: WebhookEndpoint | None) -> str:
        # an unsaved endpoint (the add page, shown again with an error) has no stored secret yet
        return "set" if obj is not None and obj.pk and obj.secret else "not set"

    @admin.display(description="URL path")
    def webhook_path(self, obj: WebhookEndpoint) -> str:
        return endpoint_path(source=obj.source, name=obj.name)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["webhook_url"] = endpoint_url(request, source=obj.source, name=obj.name) if obj else ""
        context["webhook_url_base"] = endpoint_url(request, source="github", name="NAME").rsplit("/github/NAME", 1)[0]
        context["recent_deliveries"] = list(obj.deliveries.order_by("-received_at", "-id")[:10]) if obj else []
        context["recent_refusals"] = list(obj.refusals.order_by("-last_at", "-id")[:10]) if obj else []
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """What each endpoint received (read-only): the delivery id, the event and what it became."""

    list_display = ("delivery_id", "endpoint", "event", "outcome", "reason", "received_at")
    list_filter = ("outcome", "endpoint")
    search_fields = ("delivery_id", "event")
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def changelist_view(self, request, extra_context=None):
        refusals = WebhookRefusal.objects.aggregate(rows=Count("id"), requests=Sum("count"))
        return super().changelist_view(request, {**(extra_context or {}), "refusals": refusals})


@admin.register(WebhookRefusal)
class WebhookRefusalAdmin(admin.ModelAdmin):
    """Requests the webhook URLs refused or could not store, with the reason (read-only), counted
    per minute (``inbox.webhooks.refusals``: bounded whatever a sender posts)."""

    list_display = ("last_at", "source", "endpoint_name", "status", "code", "count", "reason", "delivery_id")
    list_filter = ("status", "code", "source", "endpoint")
    search_fields = ("name", "reason", "delivery_id")
    readonly_fields = [f.name for f in WebhookRefusal._meta.fields]
    date_hierarchy = "last_at"

    @admin.display(description="endpoint", ordering="name")
    def endpoint_name(self, obj: WebhookRefusal) -> str:
        return obj.name or "(unknown endpoint)"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
