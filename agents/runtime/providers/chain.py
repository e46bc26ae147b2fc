"""Model fallback chains: a list of models as an agent's (or a call's) ``model``, as Mastra's
``model: [{ model, maxRetries, enabled }, ...]``.

``Agent(model=[{"model": "openai/gpt-4o", "max_retries": 2}, {"model": "anthropic/claude-sonnet-4-5",
"max_retries": 1}, "local/echo"])``. Each entry is a dict with

- ``model`` (required): what ``model`` may be alone (a ``"provider/model"`` string, a config dict,
  a model object);
- ``max_retries``: retries of this model before the next one is asked (default: the call's
  ``model_settings.max_retries``, else 0, as Mastra);
- ``enabled`` (default True): False skips the entry;
- ``id``: a name for the entry (default ``"<provider>/<model>"``);
- ``model_settings`` / ``provider_options``: merged over the call's for this model only;

or a bare model (string, config dict, model object), which is ``{"model": it}``. camelCase keys
(``maxRetries``, ``modelSettings``, ``providerOptions``) are accepted.

A single model is a chain of one entry whose retries default to ``model_settings.max_retries``,
else 2 (the SDKs' default). :func:`chain_of` turns any ``model`` value (after a callable has been
called) into the run's chain; :func:`model_label` names a model ``provider/model_id`` (results,
run records, breakers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentConfigError
from ..naming import snake_case, snake_keys
from .base import is_model_object
from .router import resolve_model

#: retries of a single model (no chain) when the call does not say: the SDKs' own default
SINGLE_MODEL_RETRIES = 2
ENTRY_KEYS = frozenset({"model", "max_retries", "enabled", "id", "model_settings", "provider_options"})


@dataclass(frozen=True)
class ChainEntry:
    """One resolved entry of a run's model chain."""

    model: Any  # the model object
    max_retries: int | None = None  # None: the call's model_settings.max_retries, else the default
    enabled: bool = True
    id: str = ""
    model_settings: dict = field(default_factory=dict)
    provider_options: dict = field(default_factory=dict)
    single: bool = False  # the run's model was one model, not a list

    @property
    def label(self) -> str:
        return model_label(self.model)

    def retries(self, settings: dict) -> int:
        if self.max_retries is not None:
            return self.max_retries
        asked = (settings or {}).get("max_retries")
        if asked is not None:
            return asked
        return SINGLE_MODEL_RETRIES if self.single else 0


def model_label(model: Any) -> str:
    """``provider/model_id`` of a model object (or of a model string as it is)."""
    if isinstance(model, str):
        return model
    return f"{getattr(model, 'provider', 'custom')}/{getattr(model, 'model_id', 'custom')}"


def label_parts(label: str) -> tuple[str, str]:
    """A :func:`model_label` as ``(provider, model_id)``; a label without a provider is ``("", label)``."""
    provider, _, model_id = label.partition("/")
    return (provider, model_id) if model_id else ("", label)


def is_chain(spec: Any) -> bool:
    return isinstance(spec, (list, tuple))


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AgentConfigError(where, "must be a non-negative integer")
    from ..limits import current_limits

    if value > current_limits().max_retries:
        raise AgentConfigError(where, f"must be at most {current_limits().max_retries}")
    return value


def entry_fields(item: Any, where: str) -> dict:
    """One chain entry as given → its fields in snake_case (``model`` unresolved); raises
    :class:`AgentConfigError` naming ``where``."""
    if isinstance(item, dict) and "model" in item:
        fields: dict = {}
        for key, value in item.items():
            name = snake_case(key) if isinstance(key, str) else key
            if name not in ENTRY_KEYS:
                raise AgentConfigError(f"{where}.{key}", "unknown key of a model chain entry "
                                                         f"(allowed: {', '.join(sorted(ENTRY_KEYS))})")
            fields[name] = value
        if fields.get("model") is None:
            raise AgentConfigError(f"{where}.model", "is required")
        _count(fields.get("max_retries"), f"{where}.max_retries")
        if "enabled" in fields and not isinstance(fields["enabled"], bool):
            raise AgentConfigError(f"{where}.enabled", "must be true or false")
        if fields.get("id") is not None and not isinstance(fields["id"], str):
            raise AgentConfigError(f"{where}.id", "must be a string")
        for name in ("model_settings", "provider_options"):
            if fields.get(name) is not None and not isinstance(fields[name], dict):
                raise AgentConfigError(f"{where}.{name}", "must be a dict")
        return fields
    if isinstance(item, (str, dict)) or is_model_object(item):
        return {"model": item}
    raise AgentConfigError(where, "a model chain entry is {'model': ..., 'max_retries'?, 'enabled'?} or a model")


def chain_check(spec: Any, field: str = "model") -> None:
    """Validate a chain (a list) now: every entry's shape and model, at least one entry enabled."""
    if not spec:
        raise AgentConfigError(field, "a model chain needs at least one entry")
    enabled = 0
    for index, item in enumerate(spec):
        fields = entry_fields(item, f"{field}[{index}]")
        model = fields["model"]
        if isinstance(model, (str, dict)):
            resolve_model(model, field=f"{field}[{index}].model")
        elif not is_model_object(model):
            raise AgentConfigError(f"{field}[{index}].model",
                                   "must be a 'provider/model' string, a config dict or a model")
        enabled += fields.get("enabled", True) is not False
    if not enabled:
        raise AgentConfigError(field, "every entry of the model chain is disabled (enabled: False)")


#: the chain of one model, by the model's ``id()`` (with the model, which keeps that id its own):
#: the same frozen tuple for every run of that model, at most this many models
_SINGLE_CHAINS_MAX = 256
_single_chains: dict[int, tuple[Any, tuple[ChainEntry, ...]]] = {}


def _single_chain(model: Any) -> tuple[ChainEntry, ...]:
    known = _single_chains.get(id(model))
    if known is not None and known[0] is model:
        return known[1]
    chain = (ChainEntry(model=model, single=True),)
    if len(_single_chains) < _SINGLE_CHAINS_MAX:
        _single_chains[id(model)] = (model, chain)
    return chain


def chain_of(spec: Any, *, field: str = "model") -> tuple[ChainEntry, ...]:
    """The run's chain for a ``model`` value: a list (a fallback chain) or one model."""
    if not is_chain(spec):
        return _single_chain(resolve_model(spec, field=field))
    chain_check(spec, field)
    entries = []
    for index, item in enumerate(spec):
        fields = entry_fields(item, f"{field}[{index}]")
        model = resolve_model(fields["model"], field=f"{field}[{index}].model")
        entries.append(ChainEntry(
            model=model, max_retries=fields.get("max_retries"), enabled=fields.get("enabled", True),
            id=fields.get("id") or model_label(model),
            model_settings=snake_keys(fields.get("model_settings") or {}),
            provider_options=dict(fields.get("provider_options") or {})))
    return tuple(entries)


def chain_labels(spec: Any) -> list[str]:
    """The ``provider/model`` ids a ``model`` value names (strings and config dicts; a model object by
    its label), in order, disabled entries included."""
    items = spec if is_chain(spec) else [spec]
    out = []
    for item in items:
        model = item["model"] if isinstance(item, dict) and "model" in item else item
        if isinstance(model, str):
            out.append(model)
        elif isinstance(model, dict):
            out.append(str(model.get("id") or f"{model.get('providerId')}/{model.get('modelId')}"))
        else:
            out.append(model_label(model))
    return out


__all__ = ["ChainEntry", "SINGLE_MODEL_RETRIES", "chain_check", "chain_labels", "chain_of", "entry_fields", "is_chain",
           "model_label"]
