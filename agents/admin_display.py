"""How long ids show in admin lists: shortened to their first characters, whole in a title.

A run id or a thread id is a UUID or longer; beside the admin's menu a list of them would run past
the screen. Every list (runs, events, spans, scores, the cost ledger) shortens them the same way.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet
from django.urls import reverse
from django.utils.html import format_html

from agents.models import Run

#: an id longer than this is shown in a list as its first characters and "…" (whole in its title)
SHORT_ID = 12


def shortened(text: str, keep: int = SHORT_ID) -> str:
    return text if len(text) <= keep else text[:keep - 4] + "…"


def short_link(model: str, pk: str | None, whole: str | None = None, text: str | None = None) -> str:
    """A link for a list to the admin page of agents' ``model`` ``pk``: ``text`` (``pk`` shortened by
    default), ``whole`` (``pk``) in its title; ``-`` without ``pk``."""
    if not pk:
        return "-"
    return format_html('<a href="{}" title="{}">{}</a>', reverse(f"admin:agents_{model}_change", args=[pk]),
                       whole or pk, text or shortened(pk))


def run_cell(run_id: str | None, *, stored: bool) -> str:
    """A run's id in a list: a link to its page when the run is ``stored`` (a successful run without
    memory has no record), else the id alone; shortened either way, whole in its title."""
    if stored or not run_id:
        return short_link("run", run_id)
    return format_html('<span title="{}">{}</span>', run_id, shortened(run_id))


def with_run_stored(rows: QuerySet) -> QuerySet:
    """``rows`` (each with a ``run_id``) annotated ``run_stored``: whether the run has a record (a
    successful run without memory has none; a score can outlive its run), in the list's one query
    rather than one query per row (:func:`run_cell`)."""
    return rows.annotate(run_stored=Exists(Run.objects.filter(pk=OuterRef("run_id"))))
