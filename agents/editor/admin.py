"""The agent editor in the admin: one page per code-defined agent.

The page shows the code's fields read-only, the fields the agent's ``editor`` locks and the user's
permissions leave editable, the tools registered on the site (description and input schema), the
versions (publish, roll back, compare) and a "try it" panel that streams a draft's answer (markdown, tool calls, usage). Every
write is one service call (``agents.editor.services``); a POST carrying a field the page did not
offer (a forged edit of a locked field) is refused with 403 and stores nothing.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from agents.editor.exceptions import EditorError, InvalidOverride, StaleVersion
from agents.editor.forms import (PUBLISH_PERMISSION, AgentEditForm, fields_permitted, posted_fields,
                                 schema_text)
from agents.editor.locks import IGNORED_LABEL, EditorLocks
from agents.editor.model_chain import chain_lines
from agents.editor.models import AgentDefinition, AgentVersion
from agents.editor.selectors import (overrides_diff, overrides_effective, version_diffs, version_latest,
                                     version_published)
from agents.editor.services import version_publish, version_rollback, version_save
from agents.editor.trying import try_frames
from agents.registry import get_mastra

FIELD_LABELS = {"instructions": "Instructions", "tools": "Tool membership", "tool_descriptions": "Tool descriptions",
                "model": "Model"}
TRY_MAX_PROMPT = 4000


@admin.register(AgentDefinition)
class AgentDefinitionAdmin(admin.ModelAdmin):
    list_display = ("agent_id", "name", "present", "editable", "published", "latest", "synced_at")
    list_filter = ("present",)
    search_fields = ("agent_id", "name")

    def has_add_permission(self, request) -> bool:
        return False  # agents come from code

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # an agent gone from code keeps its history

    def has_change_permission(self, request, obj=None) -> bool:
        return request.user.is_active and request.user.is_staff and bool(
            fields_permitted(request.user) or request.user.has_perm(PUBLISH_PERMISSION))

    @admin.display(description="editable in the admin")
    def editable(self, obj: AgentDefinition) -> str:
        return EditorLocks.of(obj.editor).describe()

    @admin.display(description="published")
    def published(self, obj: AgentDefinition) -> str:
        version = version_published(obj)
        return f"v{version.number}" if version else "code"

    @admin.display(description="latest")
    def latest(self, obj: AgentDefinition) -> str:
        version = version_latest(obj)
        return f"v{version.number} ({version.status})" if version else "-"

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<int:object_id>/versions/<int:version_id>/publish/", wrap(self.publish_view),
                 name="agents_agentdefinition_publish"),
            path("<int:object_id>/rollback/", wrap(self.rollback_view), name="agents_agentdefinition_rollback"),
            path("<int:object_id>/compare/", wrap(self.compare_view), name="agents_agentdefinition_compare"),
            path("<int:object_id>/try/", wrap(self.try_view), name="agents_agentdefinition_try"),
        ] + super().get_urls()

    # -- the page ---------------------------------------------------------------------------
    def definition_or_404(self, request, object_id) -> AgentDefinition:
        definition = get_object_or_404(AgentDefinition, pk=object_id)
        if not self.has_view_or_change_permission(request, definition):
            raise PermissionDenied
        return definition

    def change_view(self, request, object_id, form_url="", extra_context=None):
        definition = self.definition_or_404(request, object_id)
        locks = EditorLocks.of(definition.editor)
        permitted = fields_permitted(request.user)
        editable = tuple(f for f in locks.editable_fields if f in permitted) if definition.present else ()
        latest = version_latest(definition)
        kept, ignored = locks.strip(latest.overrides if latest else {})
        effective = overrides_effective(definition, kept)
        published = version_published(definition)
        site_tools = get_mastra().get_tools()
        form_kwargs = {"editable": editable, "site_tools": site_tools, "effective": effective}
        if request.method == "POST":
            refused = sorted(posted_fields(request.POST) - set(editable))
            if refused:
                raise PermissionDenied(f"{refused[0]} is not editable here")
            form = AgentEditForm(request.POST, **form_kwargs)
            if form.is_valid():
                changes = form.changes(kept)
                if not changes:
                    form.add_error(None, "Nothing to save: no field changed.")
                else:
                    based_on = form.cleaned_data["based_on"]
                    try:
                        version = version_save(
                            agent_id=definition.agent_id, changes=changes,
                            based_on_id=int(based_on) if based_on.isdigit() else None, author=request.user,
                            note=form.cleaned_data["note"], allowed=editable, site_tools=site_tools)
                    except InvalidOverride as exc:
                        form.add_error(form.error_field(exc.field), exc.message)
                    except StaleVersion as exc:
                        form.add_error(None, exc.message)
                    else:
                        self.message_user(request, f"Saved v{version.number} as a draft.", messages.SUCCESS)
                        return HttpResponseRedirect(request.path)
        else:
            form = AgentEditForm(initial={"based_on": str(latest.pk) if latest else ""}, **form_kwargs)
        context = {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": f"Agent {definition.agent_id}",
            "definition": definition, "locks": locks, "form": form, "editable": editable,
            "ignored": [(FIELD_LABELS[f], IGNORED_LABEL) for f in ignored], "effective": effective,
            "rows": self.field_rows(definition, locks, editable, permitted, effective, form),
            "tool_rows": self.tool_rows(site_tools, effective, form, editable),
            "model_section": self.model_section(definition, locks, editable, permitted, effective, form),
            "versions": self.version_rows(definition), "latest": latest,
            "published": published,
            # rolling back to the code's definition is offered only when something else runs
            "can_roll_back_to_code": published is not None and bool(locks.strip(published.overrides or {})[0]),
            "can_publish": request.user.has_perm(PUBLISH_PERMISSION) and definition.present,
            "can_try": bool(editable) or request.user.has_perm(PUBLISH_PERMISSION),
            "original": definition, "has_view_permission": True,
        }
        return TemplateResponse(request, "admin/agents/agentdefinition/editor.html", context)

    def field_rows(self, definition, locks, editable, permitted, effective, form) -> list[dict]:
        rows = []
        for field in ("instructions",):
            reason = ("" if field in editable else "locked by code" if not locks.editable(field)
                      else "agent gone from code" if not definition.present else "no permission")
            rows.append({"name": field, "label": FIELD_LABELS[field], "field": form[field] if field in form.fields else None,
                         "value": effective[field], "reason": reason})
        return rows

    def model_section(self, definition, locks, editable, permitted, effective, form) -> dict:
        """The model's fallback chain: editable rows (model id, retries, enabled, order) where the
        locks and the user's permissions allow it, else the chain read-only with the reason."""
        reason = ("" if "model" in editable else "locked by code" if not locks.editable("model")
                  else "agent gone from code" if not definition.present else "no permission")
        rows = [{part: form[name] for part, name in names.items()} for names in form.model_rows]
        return {"editable": "model" in editable, "rows": rows, "reason": reason,
                "lines": chain_lines(effective.get("model")), "code_label": definition.model,
                "errors": [form[name].errors for names in form.model_rows for name in names.values()
                           if form[name].errors]}

    def tool_rows(self, site_tools, effective, form, editable) -> list[dict]:
        members = set(effective["tools"] or [])
        rows = []
        for name in sorted(site_tools if "tools" in editable else (set(site_tools) & members) | members):
            tool = site_tools.get(name)
            key = f"description__{name}"
            rows.append({"name": name, "member": name in members,
                         "description": effective["tool_descriptions"].get(name, tool.description if tool else ""),
                         "description_field": form[key] if key in form.fields else None,
                         "schema": schema_text(tool) if tool else "(no longer in code)"})
        return rows

    def version_rows(self, definition) -> list[dict]:
        rows = []
        for version in definition.versions.order_by("-number"):
            diffs = version_diffs(version)
            rows.append({"version": version, "previous": [c.field for c in diffs["previous"]],
                         "code": [c.field for c in diffs["code"]]})
        return rows

    # -- actions ----------------------------------------------------------------------------
    def publish_permission(self, request, definition) -> None:
        if not request.user.has_perm(PUBLISH_PERMISSION) or not definition.present:
            raise PermissionDenied

    def publish_view(self, request, object_id, version_id):
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:agents_agentdefinition_change", args=[object_id]))
        definition = self.definition_or_404(request, object_id)
        self.publish_permission(request, definition)
        version = get_object_or_404(AgentVersion, pk=version_id, agent=definition)
        version_publish(version_id=version.pk)
        self.message_user(request, f"Published v{version.number}: the next runs use it.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:agents_agentdefinition_change", args=[object_id]))

    def rollback_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:agents_agentdefinition_change", args=[object_id]))
        definition = self.definition_or_404(request, object_id)
        self.publish_permission(request, definition)
        target = request.POST.get("to", "")
        try:
            version = version_rollback(agent_id=definition.agent_id, author=request.user,
                                       to_version_id=int(target) if target.isdigit() else None)
        except EditorError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            self.message_user(request, f"Rolled back: v{version.number} is published ({version.note})",
                              messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:agents_agentdefinition_change", args=[object_id]))

    def compare_view(self, request, object_id):
        definition = self.definition_or_404(request, object_id)
        versions = {str(v.pk): v for v in definition.versions.all()}

        def side(key: str):
            if key in versions:
                return f"v{versions[key].number}", overrides_effective(definition, versions[key].overrides)
            return "code", overrides_effective(definition, {})

        (a_label, a), (b_label, b) = side(request.GET.get("a", "code")), side(request.GET.get("b", "code"))
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "definition": definition,
                   "title": f"Compare versions of {definition.agent_id}", "a_label": a_label,
                   "b_label": b_label, "changes": overrides_diff(a, b), "original": definition}
        return TemplateResponse(request, "admin/agents/agentdefinition/compare.html", context)

    def try_view(self, request, object_id):
        """POST ``prompt`` and ``version`` (a version id; none: the published version) → the run,
        streamed as JSON lines (``agents.editor.trying``: text, tool calls and results, usage).
        Nothing is published and no memory thread is written."""
        if request.method != "POST":
            raise PermissionDenied
        definition = self.definition_or_404(request, object_id)
        if not (fields_permitted(request.user) or request.user.has_perm(PUBLISH_PERMISSION)) or not definition.present:
            raise PermissionDenied
        prompt = request.POST.get("prompt", "").strip()[:TRY_MAX_PROMPT] or "Hello"
        version = request.POST.get("version", "")
        agent = get_mastra().get_agent(definition.agent_id)
        versions = ({"agents": {agent.id: {"version_id": version}}} if version.isdigit() else None)
        response = StreamingHttpResponse(try_frames(agent, prompt, versions=versions),
                                         content_type="application/x-ndjson; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
