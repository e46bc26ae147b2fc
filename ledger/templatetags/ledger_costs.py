"""``{% run_costs run_id %}``: a run's usage and cost from the ledger (the run's admin page)."""

from __future__ import annotations

from django import template

from ledger.selectors import cost_format, run_costs as run_costs_read

register = template.Library()


@register.inclusion_tag("ledger/run_costs.html")
def run_costs(run_id: str) -> dict:
    costs = run_costs_read(run_id=run_id)
    for step in costs.steps:
        step.cost_display = cost_format(step.cost)
    return {"costs": costs}
