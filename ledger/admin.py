"""Admin for the price table: a price is added, never rewritten (a saved row's prices are
read-only; "New price from this one" opens the add form filled with them, for a new effective date)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from .models import ModelPrice

PRICE_FIELDS = ("provider", "model", "input", "output", "cached_input", "reasoning", "effective_from")


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    list_display = ("provider", "model", "input", "output", "cached_input", "reasoning", "currency",
                    "effective_from", "note")
    list_filter = ("provider", "effective_from")
    search_fields = ("model",)

    def get_fields(self, request, obj=None):
        if obj is None:
            return PRICE_FIELDS + ("note",)
        return PRICE_FIELDS + ("currency", "note", "new_price")

    def get_readonly_fields(self, request, obj=None):
        # history stays as it was: a price change is a new row with its own effective date
        return PRICE_FIELDS + ("currency", "new_price") if obj is not None else ()

    @admin.display(description="change of price")
    def new_price(self, obj: ModelPrice) -> str:
        query = urlencode({"provider": obj.provider, "model": obj.model, "input": obj.input, "output": obj.output,
                           "cached_input": "" if obj.cached_input is None else obj.cached_input,
                           "reasoning": "" if obj.reasoning is None else obj.reasoning})
        return format_html('<a href="{}?{}">New price from this one</a> (a new row with its own effective date; '
                           "steps already recorded keep their cost)", reverse("admin:ledger_modelprice_add"), query)

    def has_delete_permission(self, request, obj=None) -> bool:
        # a price some steps were costed at stays; only a superuser removes a mistake
        return request.user.is_superuser and super().has_delete_permission(request, obj)
