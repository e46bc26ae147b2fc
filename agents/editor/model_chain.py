"""The model as the editor stores it: a fallback chain (docs/agents.md, "Fallback chains") of entries
``{"model": "provider/model", "max_retries": n, "enabled": bool}``, in the order they are tried.

Only an agent whose code says ``editor={"model": True}`` may have one (``EditorLocks``); the run uses
the published chain instead of the code's model (``agents.runtime.overrides``). Entries are checked
when they are saved: the model id names a known provider and model, the retries are a whole number
within ``MASTRA_MAX_RETRIES``, at least one entry is enabled. A model id whose key is missing is
accepted: its step fails over to the next entry at run time.
"""

from __future__ import annotations

from typing import Any

from agents.editor.exceptions import InvalidOverride
from agents.runtime.errors import AgentConfigError
from agents.runtime.limits import current_limits
from agents.runtime.providers.chain import SINGLE_MODEL_RETRIES, entry_fields, is_chain
from agents.runtime.providers.router import resolve_model

#: the most entries a chain may have
MAX_CHAIN = 8


def code_chain(model: Any) -> list[dict] | None:
    """The code's ``model`` as a chain the editor can show and start from, or None when the code's
    model is not a list of ``provider/model`` ids (a model object, a callable, a config dict).
    One model is a chain of one entry with the retries it has alone."""
    if isinstance(model, str):
        return [{"model": model, "max_retries": SINGLE_MODEL_RETRIES, "enabled": True}]
    if not is_chain(model):
        return None
    out = []
    for index, item in enumerate(model):
        try:
            fields = entry_fields(item, f"model[{index}]")
        except AgentConfigError:
            return None
        if not isinstance(fields["model"], str) or set(fields) - {"model", "max_retries", "enabled"}:
            return None
        out.append({"model": fields["model"], "max_retries": fields.get("max_retries") or 0,
                    "enabled": fields.get("enabled", True) is not False})
    return out


def model_chain_check(entries: Any) -> list[dict]:
    """``entries`` checked and normalised; raises :class:`InvalidOverride` naming the entry's field
    (``model[1].model``, ``model[0].max_retries``) or the chain (``model``)."""
    if not isinstance(entries, (list, tuple)) or not entries:
        raise InvalidOverride("model", "The model chain needs at least one model.")
    if len(entries) > MAX_CHAIN:
        raise InvalidOverride("model", f"A model chain has at most {MAX_CHAIN} models.")
    out = []
    for index, entry in enumerate(entries):
        where = f"model[{index}]"
        if not isinstance(entry, dict) or set(entry) - {"model", "max_retries", "enabled"}:
            raise InvalidOverride(where, "An entry is {model, max_retries, enabled}.")
        model_id = entry.get("model")
        if not isinstance(model_id, str) or not model_id.strip():
            raise InvalidOverride(f"{where}.model", "A model id is required, e.g. openai/gpt-4o.")
        model_id = model_id.strip()
        if any(ch.isspace() or not ch.isprintable() for ch in model_id):
            raise InvalidOverride(f"{where}.model", f"{model_id!r} is not a model id: no spaces, e.g. openai/gpt-4o.")
        try:
            resolve_model(model_id, field=f"{where}.model")
        except AgentConfigError as exc:
            raise InvalidOverride(f"{where}.model", exc.problem[:1].upper() + exc.problem[1:] + ".") from None
        retries = entry.get("max_retries", 0)
        limit = current_limits().max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= limit:
            raise InvalidOverride(f"{where}.max_retries", f"Retries are a whole number from 0 to {limit}.")
        enabled = entry.get("enabled", True)
        if not isinstance(enabled, bool):
            raise InvalidOverride(f"{where}.enabled", "Enabled is true or false.")
        out.append({"model": model_id, "max_retries": retries, "enabled": enabled})
    if not any(entry["enabled"] for entry in out):
        raise InvalidOverride("model", "At least one model of the chain must be enabled.")
    return out


def chain_lines(entries: list[dict] | None) -> list[str]:
    """One line per entry, as the diff and the read-only page show them."""
    return [f"{e['model']} (retries {e['max_retries']}{'' if e['enabled'] else ', disabled'})" for e in entries or []]


__all__ = ["MAX_CHAIN", "chain_lines", "code_chain", "model_chain_check"]
