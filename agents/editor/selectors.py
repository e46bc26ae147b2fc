"""Reads of the editor's tables: the version a run selects, the published overrides of every
agent, the generation counter, the effective values of a version and the diff of two."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from django.db.models import OuterRef, Subquery

from agents.editor.locks import EditorLocks
from agents.editor.model_chain import chain_lines
from agents.editor.models import AgentDefinition, AgentVersion, EditorGeneration
from agents.runtime.errors import AgentConfigError


def generation_read() -> int:
    """The editor generation (0 before the first publish)."""
    return EditorGeneration.objects.filter(pk=1).values_list("value", flat=True).first() or 0


def published_overrides_all() -> dict[str, tuple[str, dict]]:
    """``{agent id: (version id, overrides)}`` of every agent with a published version."""
    rows = AgentVersion.objects.filter(status=AgentVersion.Status.PUBLISHED).values_list(
        "agent__agent_id", "pk", "overrides")
    return {agent_id: (str(pk), overrides) for agent_id, pk, overrides in rows}


def version_selected(*, agent_id: str, selection: dict) -> tuple[str, dict] | None:
    """``(version id, overrides)`` for a run's selection of ``agent_id``'s versions
    (``{"status": "published"}``, ``{"status": "draft"}`` = the latest version, or
    ``{"version_id": ...}``); ``None`` when the agent has no such version (it runs as coded).
    Raises :class:`AgentConfigError` for a version id that is not one of the agent's."""
    versions = AgentVersion.objects.filter(agent__agent_id=agent_id)
    if "version_id" in selection:
        vid = selection["version_id"]
        found = versions.filter(pk=int(vid)).values_list("pk", "overrides").first() if vid.isdigit() else None
        if found is None:
            raise AgentConfigError(f"options.versions.agents.{agent_id}.version_id",
                                   f"no version {vid} of agent {agent_id!r}")
    elif selection.get("status") == "draft":
        found = versions.order_by("-number").values_list("pk", "overrides").first()
    else:
        found = versions.filter(status=AgentVersion.Status.PUBLISHED).values_list("pk", "overrides").first()
    return (str(found[0]), found[1]) if found is not None else None


def agents_with_draft(editors: dict[str, Any]) -> set[str]:
    """The ids among ``editors`` (``{agent id: its editor option}``) whose latest version is a draft
    (what ``{"status": "draft"}`` runs) that differs from the published version (or, with none
    published, from the code), within the agent's locks. Two queries for any number of agents."""
    newest = AgentVersion.objects.filter(agent=OuterRef("agent")).order_by("-number").values("number")[:1]
    latest = AgentVersion.objects.filter(agent__agent_id__in=list(editors), number=Subquery(newest)).values_list(
        "agent__agent_id", "status", "overrides")
    published = dict(AgentVersion.objects.filter(agent__agent_id__in=list(editors),
                                                 status=AgentVersion.Status.PUBLISHED).values_list(
        "agent__agent_id", "overrides"))
    found = set()
    for agent_id, status, overrides in latest:
        if status != AgentVersion.Status.DRAFT:
            continue
        locks = EditorLocks.of(editors[agent_id])
        if locks.strip(overrides or {})[0] != locks.strip(published.get(agent_id) or {})[0]:
            found.add(agent_id)
    return found


def version_latest(definition: AgentDefinition) -> AgentVersion | None:
    return definition.versions.order_by("-number").first()


def version_published(definition: AgentDefinition) -> AgentVersion | None:
    return definition.versions.filter(status=AgentVersion.Status.PUBLISHED).first()


def overrides_effective(definition: AgentDefinition, overrides: dict) -> dict:
    """What the agent runs with under ``overrides`` (the code's values where none is stored):
    ``instructions`` (text or None), ``tools`` (sorted names or None), ``tool_descriptions``,
    ``model`` (the fallback chain, or None when the code's model is not a chain of ids)."""
    defaults = definition.defaults or {}
    tools = overrides.get("tools", defaults.get("tools"))
    descriptions = dict(defaults.get("tool_descriptions") or {})
    descriptions.update(overrides.get("tool_descriptions") or {})
    return {"instructions": overrides.get("instructions", defaults.get("instructions")),
            "tools": sorted(tools) if tools is not None else None,
            "tool_descriptions": dict(sorted(descriptions.items())),
            "model": overrides.get("model", defaults.get("model"))}


@dataclass(frozen=True)
class FieldChange:
    """One changed field: ``field`` (``instructions``, ``tools`` or ``tool_descriptions.<tool>``),
    ``lines`` (a unified diff for text, ``+ name`` / ``- name`` for tools)."""

    field: str
    before: object
    after: object
    lines: tuple[str, ...]


def overrides_diff(before: dict, after: dict) -> list[FieldChange]:
    """The changes from one effective configuration to another, in field order."""
    changes: list[FieldChange] = []
    if before["instructions"] != after["instructions"]:
        lines = difflib.unified_diff((before["instructions"] or "").splitlines(),
                                     (after["instructions"] or "").splitlines(), "before", "after", lineterm="", n=2)
        changes.append(FieldChange("instructions", before["instructions"], after["instructions"], tuple(lines)))
    old, new = set(before["tools"] or []), set(after["tools"] or [])
    if before["tools"] != after["tools"]:
        lines = [f"- {name}" for name in sorted(old - new)] + [f"+ {name}" for name in sorted(new - old)]
        changes.append(FieldChange("tools", before["tools"], after["tools"], tuple(lines)))
    if before.get("model") != after.get("model"):
        lines = [f"- {line}" for line in chain_lines(before.get("model"))] + [
            f"+ {line}" for line in chain_lines(after.get("model"))]
        changes.append(FieldChange("model", before.get("model"), after.get("model"), tuple(lines)))
    for name in sorted(set(before["tool_descriptions"]) | set(after["tool_descriptions"])):
        was, now = before["tool_descriptions"].get(name), after["tool_descriptions"].get(name)
        if was != now:
            changes.append(FieldChange(f"tool_descriptions.{name}", was, now, (f"- {was or ''}", f"+ {now or ''}")))
    return changes


def version_diffs(version: AgentVersion) -> dict[str, list[FieldChange]]:
    """``{"code": changes from the code's definition, "previous": changes from the version before}``."""
    definition = version.agent
    code = overrides_effective(definition, {})
    previous = definition.versions.filter(number__lt=version.number).order_by("-number").first()
    this = overrides_effective(definition, version.overrides)
    return {"code": overrides_diff(code, this),
            "previous": overrides_diff(overrides_effective(definition, previous.overrides) if previous else code, this)}


__all__ = ["FieldChange", "agents_with_draft", "generation_read", "overrides_diff", "overrides_effective", "published_overrides_all",
           "version_diffs", "version_latest", "version_published", "version_selected"]
