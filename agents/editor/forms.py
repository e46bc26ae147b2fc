"""The agent editor's form: the fields an agent's locks and the user's permissions leave editable."""

from __future__ import annotations

import json

from django import forms

from agents.editor.exceptions import InvalidOverride
from agents.editor.model_chain import MAX_CHAIN, model_chain_check
from agents.runtime.tools import Tool

DESCRIPTION_PREFIX = "description__"
#: the override field each permission guards
FIELD_PERMISSIONS = {"instructions": "agents.edit_agent_instructions", "tools": "agents.edit_agent_tools",
                     "tool_descriptions": "agents.edit_agent_tools", "model": "agents.edit_agent_model"}
#: the form fields of the model chain's row ``i``: ``model_<i>_id``, ``_retries``, ``_enabled``, ``_order``
MODEL_PREFIX = "model_"
PUBLISH_PERMISSION = "agents.publish_agent_version"


def fields_permitted(user) -> set[str]:
    """The override fields ``user``'s permissions let them edit."""
    return {field for field, perm in FIELD_PERMISSIONS.items() if user.has_perm(perm)}


def posted_fields(data) -> set[str]:
    """The override fields a POST carries values for."""
    found = {name for name in ("instructions", "tools") if name in data}
    if any(key.startswith(DESCRIPTION_PREFIX) for key in data):
        found.add("tool_descriptions")
    if any(key.startswith(MODEL_PREFIX) for key in data):
        found.add("model")
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
        self.model_rows: list[dict] = []
        self.model_row_of: list[int] = []  # chain entry index -> form row
        if "model" in editable:
            chain = effective.get("model") or []
            for row in range(min(max(len(chain) + 2, 3), MAX_CHAIN)):
                entry = chain[row] if row < len(chain) else {}
                names = {part: f"{MODEL_PREFIX}{row}_{part}" for part in ("id", "retries", "enabled", "order")}
                self.fields[names["id"]] = forms.CharField(
                    required=False, max_length=200, initial=entry.get("model", ""), label=f"Model {row + 1}",
                    widget=forms.TextInput(attrs={"size": 32, "placeholder": "provider/model, e.g. openai/gpt-4o",
                                                  "autocomplete": "off"}))
                self.fields[names["retries"]] = forms.IntegerField(
                    required=False, min_value=0, initial=entry.get("max_retries", 0), label=f"Retries of model {row + 1}",
                    widget=forms.NumberInput(attrs={"style": "width: 5em"}))
                self.fields[names["enabled"]] = forms.BooleanField(
                    required=False, initial=entry.get("enabled", True), label=f"Model {row + 1} enabled")
                self.fields[names["order"]] = forms.IntegerField(
                    required=False, initial=row + 1, label=f"Order of model {row + 1}",
                    widget=forms.NumberInput(attrs={"style": "width: 4em"}))
                self.model_rows.append(names)

    def clean(self):
        data = super().clean()
        # browsers send a textarea's line breaks as CRLF: unchanged text must compare equal
        for name, value in data.items():
            if isinstance(value, str) and (name == "instructions" or name.startswith(DESCRIPTION_PREFIX)):
                data[name] = value.replace("\r\n", "\n")
        extra = sorted(key[len(DESCRIPTION_PREFIX):] for key in self.data
                       if key.startswith(DESCRIPTION_PREFIX) and key[len(DESCRIPTION_PREFIX):] not in self.described)
        if extra:
            raise forms.ValidationError(f"Unknown tool: {extra[0]}.")
        if self.model_rows:
            data["model"] = self.clean_model_chain(data)
        return data

    def clean_model_chain(self, data: dict) -> list[dict] | None:
        """The chain of the filled-in rows, in their order (``order``, then the rows' order); None
        when no row is filled in and the code's model is not a chain the editor shows."""
        if any(name in self.errors for row in self.model_rows for name in row.values()):
            return None
        filled = [(data.get(row["order"]) if data.get(row["order"]) is not None else index + 1, index)
                  for index, row in enumerate(self.model_rows) if (data.get(row["id"]) or "").strip()]
        self.model_row_of = [index for _order, index in sorted(filled)]
        if not filled and self.effective.get("model") is None:
            return None
        entries = [{"model": data[self.model_rows[i]["id"]].strip(),
                    "max_retries": data.get(self.model_rows[i]["retries"]) or 0,
                    "enabled": bool(data.get(self.model_rows[i]["enabled"]))} for i in self.model_row_of]
        try:
            return model_chain_check(entries)
        except InvalidOverride as exc:
            self.add_error(self.error_field(exc.field), exc.message)
            return None

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
        if "model" in self.editable and data.get("model") is not None and data["model"] != self.effective.get("model"):
            out["model"] = data["model"]
        return out

    def error_field(self, field: str) -> str | None:
        """The form field showing a service error about ``field``."""
        if field.startswith("tool_descriptions."):
            name = f"{DESCRIPTION_PREFIX}{field.split('.', 1)[1]}"
            return name if name in self.fields else None
        if field.startswith("model[") and self.model_rows:
            index, _, part = field[len("model["):].partition("]")
            row = self.model_row_of[int(index)] if index.isdigit() and int(index) < len(self.model_row_of) else 0
            part = {".max_retries": "retries", ".enabled": "enabled"}.get(part, "id")
            return self.model_rows[row][part]
        if field == "model":
            return self.model_rows[0]["id"] if self.model_rows else None
        return field if field in self.fields else None


def schema_text(tool: Tool) -> str:
    return json.dumps(tool.parameters(), indent=2, sort_keys=True)


__all__ = ["AgentEditForm", "DESCRIPTION_PREFIX", "FIELD_PERMISSIONS", "MODEL_PREFIX", "PUBLISH_PERMISSION", "fields_permitted",
           "posted_fields", "schema_text"]
