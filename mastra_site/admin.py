"""The admin of DRF's API tokens, in place of DRF's ``TokenAdmin`` (whose list shows every key to
anyone allowed to view tokens): a key is shown once, to whoever creates the token, and never
again; the pages show its first four characters."""

from __future__ import annotations

from django.contrib import admin, messages
from rest_framework.authtoken.admin import TokenAdmin
from rest_framework.authtoken.models import TokenProxy

from .models import ApiToken, key_hint

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
