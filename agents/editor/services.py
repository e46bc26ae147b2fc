"""Writes of the editor: save a version (optimistic locking), publish, roll back.

Every write runs in one transaction holding the agent definition's row lock, so two saves of
one agent are ordered and the second sees the first. A publish or roll back bumps the editor
generation, which every process's cache watches (``agents.editor.overrides``).
"""

from __future__ import annotations

from typing import Any, Iterable

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents.editor.exceptions import InvalidOverride, LockedField, StaleVersion, VersionNotFound
from agents.editor.locks import OVERRIDE_FIELDS, EditorLocks
from agents.editor.model_chain import model_chain_check
from agents.editor.models import AgentDefinition, AgentVersion, EditorGeneration
from agents.editor.overrides import published_cache

#: instructions longer than this (UTF-8 bytes) are refused
MAX_INSTRUCTIONS_BYTES = 100 * 1024
MAX_DESCRIPTION_CHARS = 4000


def overrides_check(changes: dict, *, site_tools: Iterable[str]) -> dict:
    """``changes`` validated and normalised; raises :class:`InvalidOverride` naming the field."""
    out: dict = {}
    unknown = set(changes) - set(OVERRIDE_FIELDS)
    if unknown:
        raise InvalidOverride(sorted(unknown)[0], "is not a field the editor can change")
    known = set(site_tools)
    if "instructions" in changes:
        text = changes["instructions"]
        if not isinstance(text, str) or not text.strip():
            raise InvalidOverride("instructions", "Instructions cannot be empty.")
        if len(text.encode()) > MAX_INSTRUCTIONS_BYTES:
            raise InvalidOverride("instructions", f"Instructions are limited to {MAX_INSTRUCTIONS_BYTES // 1024} KB.")
        out["instructions"] = text
    if "tools" in changes:
        tools = changes["tools"]
        if not isinstance(tools, (list, tuple)) or not all(isinstance(t, str) for t in tools):
            raise InvalidOverride("tools", "Tools must be a list of tool ids.")
        missing = sorted(set(tools) - known)
        if missing:
            raise InvalidOverride("tools", f"Unknown tool: {missing[0]}.")
        out["tools"] = sorted(set(tools))
    if "tool_descriptions" in changes:
        descriptions = changes["tool_descriptions"]
        if not isinstance(descriptions, dict):
            raise InvalidOverride("tool_descriptions", "Tool descriptions must be {tool id: text}.")
        for name, text in descriptions.items():
            if name not in known:
                raise InvalidOverride(f"tool_descriptions.{name}", f"Unknown tool: {name}.")
            if not isinstance(text, str) or not text.strip():
                raise InvalidOverride(f"tool_descriptions.{name}", "A tool description cannot be empty.")
            if len(text) > MAX_DESCRIPTION_CHARS:
                raise InvalidOverride(f"tool_descriptions.{name}",
                                      f"A tool description is limited to {MAX_DESCRIPTION_CHARS} characters.")
        out["tool_descriptions"] = dict(sorted(descriptions.items()))
    if "model" in changes:
        out["model"] = model_chain_check(changes["model"])
    return out


def overrides_minimal(definition: AgentDefinition, overrides: dict) -> dict:
    """``overrides`` without the values equal to the code's (so that a later change of the code's
    default reaches the agent wherever the operators did not change it)."""
    defaults = definition.defaults or {}
    out = {}
    if "instructions" in overrides and overrides["instructions"] != defaults.get("instructions"):
        out["instructions"] = overrides["instructions"]
    if "tools" in overrides and overrides["tools"] != sorted(defaults.get("tools") or []):
        out["tools"] = overrides["tools"]
    code_descriptions = defaults.get("tool_descriptions") or {}
    descriptions = {name: text for name, text in (overrides.get("tool_descriptions") or {}).items()
                    if code_descriptions.get(name) != text}
    if descriptions:
        out["tool_descriptions"] = descriptions
    if "model" in overrides and overrides["model"] != defaults.get("model"):
        out["model"] = overrides["model"]
    return out


def version_save(*, agent_id: str, changes: dict, based_on_id: int | None, author: Any = None, note: str = "",
                 allowed: Iterable[str] | None = None, site_tools: Iterable[str] | None = None) -> AgentVersion:
    """Save a new draft version of ``agent_id`` from the latest one with ``changes`` (the new
    values of some override fields) applied.

    Refused: a field the agent's code locks or outside ``allowed`` (the user's permissions;
    ``None``: no limit) → :class:`LockedField`; a tool outside ``site_tools`` (``None``: the tools of
    the site's ``Mastra``) or another bad value → :class:`InvalidOverride`; a save whose
    ``based_on_id`` is not the agent's latest version (``None`` = "no version yet") →
    :class:`StaleVersion`. Nothing is stored when it raises."""
    with transaction.atomic():
        definition = AgentDefinition.objects.select_for_update().get(agent_id=agent_id)
        locks = EditorLocks.of(definition.editor)
        for field in changes:
            if field in OVERRIDE_FIELDS and not locks.editable(field):
                raise LockedField(field, "locked by the agent's code")
            if allowed is not None and field in OVERRIDE_FIELDS and field not in allowed:
                raise LockedField(field, "you do not have the permission")
        if site_tools is None:
            from agents.registry import get_mastra

            site_tools = get_mastra().get_tools()
        clean = overrides_check(changes, site_tools=site_tools)
        latest = definition.versions.order_by("-number").first()
        if (latest.pk if latest else None) != based_on_id:
            raise StaleVersion(stale_message(definition, latest, based_on_id))
        kept, _ignored = locks.strip(latest.overrides if latest else {})
        overrides = overrides_minimal(definition, {**kept, **clean})
        return AgentVersion.objects.create(
            agent=definition, number=(latest.number if latest else 0) + 1, overrides=overrides, based_on=latest,
            author=author if getattr(author, "pk", None) else None,
            author_name=getattr(author, "username", "") or "", note=note[:500])


def stale_message(definition: AgentDefinition, latest: AgentVersion | None, based_on_id: int | None) -> str:
    if latest is None:
        return f"The version you edited no longer exists for {definition.agent_id}. Reload the page and edit again."
    based = AgentVersion.objects.filter(pk=based_on_id).values_list("number", flat=True).first() if based_on_id else None
    started = f"v{based}" if based else "the code's definition"
    who = latest.author_name or "someone"
    return (f"Not saved: {who} saved v{latest.number} of {definition.agent_id} at "
            f"{latest.created_at:%Y-%m-%d %H:%M:%S} UTC while you were editing {started}. "
            f"Reload the page to see v{latest.number}, then make your change again.")


def generation_bump() -> None:
    EditorGeneration.objects.get_or_create(pk=1)
    EditorGeneration.objects.filter(pk=1).update(value=F("value") + 1)
    transaction.on_commit(published_cache.invalidate)


def version_publish(*, version_id: int) -> AgentVersion:
    """Make ``version_id`` its agent's published version (the previous one becomes a draft)."""
    with transaction.atomic():
        version = AgentVersion.objects.select_related("agent").filter(pk=version_id).first()
        if version is None:
            raise VersionNotFound(f"no version {version_id}")
        AgentDefinition.objects.select_for_update().get(pk=version.agent_id)
        AgentVersion.objects.filter(agent_id=version.agent_id, status=AgentVersion.Status.PUBLISHED).exclude(
            pk=version.pk).update(status=AgentVersion.Status.DRAFT)
        AgentVersion.objects.filter(pk=version.pk).update(status=AgentVersion.Status.PUBLISHED,
                                                          published_at=timezone.now())
        generation_bump()
    version.refresh_from_db()
    return version


def version_rollback(*, agent_id: str, to_version_id: int | None, author: Any = None, note: str = "") -> AgentVersion:
    """Publish the overrides of an earlier version (``None``: the code's definition) as a new
    version, so the history stays a line of immutable versions."""
    with transaction.atomic():
        definition = AgentDefinition.objects.select_for_update().get(agent_id=agent_id)
        if to_version_id is None:
            overrides, label = {}, "the code's definition"
        else:
            target = definition.versions.filter(pk=to_version_id).first()
            if target is None:
                raise VersionNotFound(f"no version {to_version_id} of {agent_id}")
            overrides, label = target.overrides, f"v{target.number}"
        latest = definition.versions.order_by("-number").first()
        version = AgentVersion.objects.create(
            agent=definition, number=(latest.number if latest else 0) + 1, overrides=overrides, based_on=latest,
            author=author if getattr(author, "pk", None) else None, author_name=getattr(author, "username", "") or "",
            note=(f"Roll back to {label}. {note}".strip())[:500])
        return version_publish(version_id=version.pk)


__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_INSTRUCTIONS_BYTES", "generation_bump", "overrides_check",
           "overrides_minimal", "stale_message", "version_publish", "version_rollback", "version_save"]
