"""The site's own admin pages.

- API tokens, in place of DRF's ``TokenAdmin`` (whose list shows every key to anyone allowed to
  view tokens): a key is shown once, to whoever creates the token, and never again; the pages show
  its first four characters.
- Export and erasure of a resource (docs/operations.md): the erasure records, a page that exports a
  resource, a page that erases one after a confirmation, and the two as actions of the threads'
  list, each behind its permission.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from rest_framework.authtoken.admin import TokenAdmin
from rest_framework.authtoken.models import TokenProxy

from agents.admin import ThreadAdmin
from agents.models import Thread

from .exceptions import ErasureRefused
from .models import ApiToken, ErasureRecord, key_hint
from .resource_erasure import resource_erase, resource_erasure_plan
from .resource_export import resource_export_json

if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


@admin.register(ApiToken)
class ApiTokenAdmin(TokenAdmin):
    """DRF's admin (one token per user, found by the user's id) with the key hidden."""

    list_display = ("hint", "user", "created")
    readonly_fields = ("hint", "created")

    def get_fields(self, request, obj=None):
        return ("user",) if obj is None else ("user", "hint", "created")

    @admin.display(description="key")
    def hint(self, obj: ApiToken) -> str:
        return key_hint(obj.key)

    def response_add(self, request, obj, post_url_continue=None):
        messages.warning(request, f"The key of the new token of {obj.user} is {obj.key} — copy it now: "
                                  "it will not be shown again.")
        return super().response_add(request, obj, post_url_continue)


# -- export and erasure of a resource (docs/operations.md) ----------------------------------------
ERASE_PERMISSION = "mastra_site.erase_resource"
EXPORT_PERMISSION = "mastra_site.export_resource"


def export_response(resource_id: str) -> HttpResponse:
    """The export document of ``resource_id`` as a JSON download."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", resource_id)[:100] or "resource"
    response = HttpResponse(resource_export_json(resource_id=resource_id), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="resource-export-{safe}.json"'
    return response


@admin.register(ErasureRecord)
class ErasureRecordAdmin(admin.ModelAdmin):
    """Read-only erasure records, and the pages that export or erase a resource (each behind its
    permission: ``mastra_site.export_resource``, ``mastra_site.erase_resource``)."""

    list_display = ("erased_at", "hash_hint", "erased_by_name", "via", "account", "total_rows")
    list_filter = ("via", "account")
    search_fields = ("resource_hash",)
    readonly_fields = ("resource_hash", "erased_at", "erased_by", "erased_by_name", "via", "account", "rows")
    change_list_template = "admin/mastra_site/erasurerecord/change_list.html"

    def has_add_permission(self, request) -> bool:
        return False  # made by erasing a resource

    def has_view_permission(self, request, obj=None) -> bool:
        # whoever may erase or export sees the records (and finds the pages from their list)
        user = request.user
        return (super().has_view_permission(request, obj) or user.has_perm(ERASE_PERMISSION)
                or user.has_perm(EXPORT_PERMISSION))

    def has_module_permission(self, request) -> bool:
        return self.has_view_permission(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the record of an erasure outlives it

    @admin.display(description="resource (salted hash)")
    def hash_hint(self, obj: ErasureRecord) -> str:
        return f"{obj.resource_hash[:16]}…"

    @admin.display(description="rows")
    def total_rows(self, obj: ErasureRecord) -> int:
        return sum(n for counts in obj.rows.values() for n in counts.values())

    def changelist_view(self, request, extra_context=None):
        extra = {"can_erase": request.user.has_perm(ERASE_PERMISSION),
                 "can_export": request.user.has_perm(EXPORT_PERMISSION), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("erase/", wrap(self.erase_view), name="mastra_site_erasurerecord_erase"),
            path("export/", wrap(self.export_view), name="mastra_site_erasurerecord_export"),
        ] + super().get_urls()

    def page(self, request, template: str, **context) -> TemplateResponse:
        return TemplateResponse(request, f"admin/mastra_site/erasurerecord/{template}", {
            **self.admin_site.each_context(request), "opts": self.model._meta, **context})

    def export_view(self, request):
        """GET ``?resource=<id>``: the export document as a download; without it, the form."""
        if not request.user.has_perm(EXPORT_PERMISSION):
            raise PermissionDenied
        resource_id = request.GET.get("resource", "").strip()
        if resource_id:
            return export_response(resource_id)
        return self.page(request, "export.html", title="Export a resource")

    def erase_view(self, request):
        """GET ``?resource=<id>``: what erasing it would delete, and a confirmation asking for the id
        again; POST ``resource`` and ``confirm`` (the same id): erase, record, back to the records."""
        if not request.user.has_perm(ERASE_PERMISSION):
            raise PermissionDenied
        source = request.POST if request.method == "POST" else request.GET
        resource_id = source.get("resource", "").strip()
        error = ""
        if request.method == "POST":
            if source.get("confirm", "").strip() != resource_id:
                error = "Type the resource id again to confirm: it did not match."
            else:
                try:
                    record = resource_erase(resource_id=resource_id, erased_by=request.user,
                                            via=ErasureRecord.Via.ADMIN)
                except ErasureRefused as exc:
                    error = exc.message
                else:
                    total = sum(n for counts in record.rows.values() for n in counts.values())
                    self.message_user(request, f"Erased the resource: {total} rows deleted or anonymised, "
                                               f"account {record.account} (erasure record {record.pk}).",
                                      messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:mastra_site_erasurerecord_changelist"))
        plan = resource_erasure_plan(resource_id=resource_id) if resource_id else None
        return self.page(request, "erase.html", title="Erase a resource", resource_id=resource_id, plan=plan,
                         error=error)


if admin.site.is_registered(Thread):
    admin.site.unregister(Thread)


@admin.register(Thread)
class ThreadResourceAdmin(ThreadAdmin):
    """The threads' admin with the export and erasure of the selected threads' resource."""

    actions = ("export_resource", "erase_resource")

    def has_export_resource_permission(self, request) -> bool:
        return request.user.has_perm(EXPORT_PERMISSION)

    def has_erase_resource_permission(self, request) -> bool:
        return request.user.has_perm(ERASE_PERMISSION)

    def one_resource(self, request, queryset) -> str | None:
        resources = sorted(set(queryset.values_list("resource_id", flat=True)))
        if len(resources) != 1:
            self.message_user(request, f"Select threads of one resource (these belong to {len(resources)}).",
                              messages.ERROR)
            return None
        return resources[0]

    @admin.action(description="Export all data of the selected threads' resource (JSON)",
                  permissions=["export_resource"])
    def export_resource(self, request, queryset):
        resource_id = self.one_resource(request, queryset)
        return export_response(resource_id) if resource_id is not None else None

    @admin.action(description="Erase all data of the selected threads' resource…", permissions=["erase_resource"])
    def erase_resource(self, request, queryset):
        resource_id = self.one_resource(request, queryset)
        if resource_id is None:
            return None
        return HttpResponseRedirect(f"{reverse('admin:mastra_site_erasurerecord_erase')}?{urlencode({'resource': resource_id})}")
