"""Admin for budgets (editable: a budget here replaces the code's of the same name), their
counters and the active-run slots (read-only runtime state)."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from agents.runtime.budgets import budget_make
from agents.runtime.errors import AgentConfigError

from .models import ActiveRunSlot, Budget, BudgetCounter


class BudgetForm(forms.ModelForm):
    class Meta:
        model = Budget
        fields = ("name", "scope", "match", "period", "unit", "limit", "mode", "enabled")

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:  # the runtime's own rules (a whole number of tokens, no match for the site, ...)
            budget_make(id=data["name"], limit=data["limit"], scope=data["scope"], period=data["period"],
                        unit=data["unit"], mode=data["mode"], match=data.get("match") or "")
        except AgentConfigError as exc:
            raise forms.ValidationError(exc.problem) from None
        return data


@admin.register(Budget)
class BudgetAdmin(admin.ModelAdmin):
    form = BudgetForm
    list_display = ("name", "scope", "match", "period", "unit", "limit", "mode", "enabled", "updated_at")
    list_filter = ("scope", "period", "unit", "mode", "enabled")
    search_fields = ("name", "match")


@admin.register(BudgetCounter)
class BudgetCounterAdmin(admin.ModelAdmin):
    list_display = ("budget_id", "scope", "scope_value", "period_key", "spent", "limit", "unit", "mode", "reached_at",
                    "resets_at", "updated_at")
    list_filter = ("budget_id", "scope", "mode", "unit")
    search_fields = ("budget_id", "scope_value", "period_key", "run_id")
    ordering = ("-updated_at",)
    readonly_fields = [f.name for f in BudgetCounter._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False  # counters are added to by runs


@admin.register(ActiveRunSlot)
class ActiveRunSlotAdmin(admin.ModelAdmin):
    list_display = ("run_id", "resource_id", "agent_id", "acquired_at", "expires_at")
    search_fields = ("run_id", "resource_id", "agent_id")
    ordering = ("-acquired_at",)
    readonly_fields = [f.name for f in ActiveRunSlot._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
