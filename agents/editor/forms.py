"""The agent editor's form: the fields an agent's locks and the user's permissions leave editable."""

from __future__ import annotations

import json

from django import forms

from agents.runtime.tools import Tool

DESCRIPTION_PREFIX = "description__"
#: the override field each permission guards
FIELD_PERMISSIONS = {"instructions": "agents.edit_agent_instructions", "tools": "agents.edit_agent_tools",
                     "tool_descriptions": "agents.edit_agent_tools"}
PUBLISH_PERMISSION = "agents.publish_agent_version"


def fields_permitted(user) -> set[str]:
    """The override fields ``user``'s permissions let them edit."""
    return {field for field, perm in FIELD_PERMISSIONS.items() if user.has_perm(perm)}


def posted_fields(data) -> set[str]:
    """The override fields a POST carries values for."""
    found = {name for name in ("instructions", "tools") if name in data}
    if any(key.startswith(DESCRIPTION_PREFIX) for key in data):
        found.add("tool_descriptions")
    return found


class AgentEditForm(forms.Form):
    """Built per agent: ``editable`` override fields, ``site_tools`` to choose from, ``effective``
    (the values the agent runs with now) as the initial values."""

    based_on = forms.CharField(widget=forms.HiddenInput, required=False)
    note = forms.CharField(max_length=500, required=False, widget=forms.TextInput(attrs={"size": 60}))

    def __init__(self, *args, editable: tuple[str, ...], site_tools: dict[str, Tool], effective: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.editable = editable
        self.effective = effective
        self.described = []
        if "instructions" in editable:
            self.fields["instructions"] = forms.CharField(
                required=False, strip=False, initial=effective["instructions"] or "",
                widget=forms.Textarea(attrs={"rows": 10, "cols": 90, "class": "vLargeTextField"}))
        if "tools" in editable:
            self.fields["tools"] = forms.MultipleChoiceField(
                required=False, choices=[(name, name) for name in sorted(site_tools)],
                initial=effective["tools"] or [], widget=forms.CheckboxSelectMultiple,
                error_messages={"invalid_choice": "Unknown tool: %(value)s."})
        if "tool_descriptions" in editable:
            names = sorted(site_tools) if "tools" in editable else list(effective["tools"] or [])
            for name in names:
                tool = site_tools.get(name)
                current = effective["tool_descriptions"].get(name, tool.description if tool else "")
                self.fields[f"{DESCRIPTION_PREFIX}{name}"] = forms.CharField(
                    required=False, initial=current, label=f"Description of {name}",
                    widget=forms.Textarea(attrs={"rows": 2, "cols": 70}))
                self.described.append(name)

    def clean(self):
        data = super().clean()
        extra = sorted(key[len(DESCRIPTION_PREFIX):] for key in self.data
                       if key.startswith(DESCRIPTION_PREFIX) and key[len(DESCRIPTION_PREFIX):] not in self.described)
        if extra:
            raise forms.ValidationError(f"Unknown tool: {extra[0]}.")
        return data

    def changes(self, kept: dict) -> dict:
        """The override fields whose submitted value differs from what the agent runs with now
        (descriptions merged over the stored ones)."""
        data = self.cleaned_data
        out: dict = {}
        if "instructions" in self.editable and data["instructions"] != (self.effective["instructions"] or ""):
            out["instructions"] = data["instructions"]
        if "tools" in self.editable and sorted(data["tools"]) != (self.effective["tools"] or []):
            out["tools"] = sorted(data["tools"])
        if "tool_descriptions" in self.editable:
            changed = {name: data[f"{DESCRIPTION_PREFIX}{name}"] for name in self.described
                       if data[f"{DESCRIPTION_PREFIX}{name}"] != self.fields[f"{DESCRIPTION_PREFIX}{name}"].initial}
            if changed:
                out["tool_descriptions"] = {**(kept.get("tool_descriptions") or {}), **changed}
        return out

    def error_field(self, field: str) -> str | None:
        """The form field showing a service error about ``field``."""
        if field.startswith("tool_descriptions."):
            name = f"{DESCRIPTION_PREFIX}{field.split('.', 1)[1]}"
            return name if name in self.fields else None
        return field if field in self.fields else None


def schema_text(tool: Tool) -> str:
    return json.dumps(tool.parameters(), indent=2, sort_keys=True)


__all__ = ["AgentEditForm", "DESCRIPTION_PREFIX", "FIELD_PERMISSIONS", "PUBLISH_PERMISSION", "fields_permitted",
           "posted_fields", "schema_text"]
