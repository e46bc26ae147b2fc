"""Model resolution: what an agent's ``model`` field may hold, turned into a model object.

``resolve_model(spec)`` accepts

- a ``"provider/model"`` string: ``openai/gpt-4o``, ``anthropic/claude-sonnet-4-5``,
  ``google/gemini-2.5-flash``, ``local/echo``. Only the first slash separates the provider, so
  model ids may contain slashes (``openai/meta-llama/Llama-3`` is model ``meta-llama/Llama-3``
  on an OpenAI-compatible server);
- a config dict ``{"id": "provider/model", "api_key"?, "url"?|"base_url"?, "headers"?, "timeout"?}``
  (``timeout``: seconds one HTTP request or stream read may take)
  (``apiKey``/``baseURL`` and ``providerId`` + ``modelId`` instead of ``id`` are accepted, as in
  Mastra); ``local/echo`` takes ``delay_ms`` and ``chunk_size`` instead of the connection keys;
- any object with a ``stream`` method, a ``provider`` and a ``model_id``: returned as it is.

Anything else raises :class:`~agents.runtime.errors.AgentConfigError` naming the field, the bad
value and the known providers. Provider modules (and so the SDKs) are imported on first use (a
web process imports those of its agents before it serves: :mod:`.preload`). Models resolved from
strings are cached per string, and from config dicts per settings (the most recent 256), so that
a model keeps its SDK clients and their connections from run to run; credentials are read when a
model first calls its provider, so resolving never fails for a missing key.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from typing import Any, Callable

from ..errors import AgentConfigError
from ..naming import snake_case, snake_keys

#: provider → (module, class) of its model; imported lazily.
PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("agents.runtime.providers.openai", "OpenAIChatModel"),
    "anthropic": ("agents.runtime.providers.anthropic", "AnthropicModel"),
    "google": ("agents.runtime.providers.google", "GoogleModel"),
    "local": ("agents.runtime.providers.echo", "EchoModel"),
}
LOCAL_MODELS = ("echo",)

# keys in snake_case (a config may spell them in camelCase: ``apiKey``, ``baseURL``) → constructor names
_CONNECTION_KEYS = {"api_key": "api_key", "url": "base_url", "base_url": "base_url", "headers": "headers",
                    "timeout": "timeout"}
_LOCAL_KEYS = {"delay_ms": "delay_ms", "chunk_size": "chunk_size"}
_ID_KEYS = ("id", "provider_id", "model_id")

_cache: dict[str, Any] = {}
#: models built from config dicts, by their settings (the most recent :data:`CONFIG_CACHE_SIZE`)
_config_cache: "OrderedDict[tuple, Any]" = OrderedDict()
CONFIG_CACHE_SIZE = 256


def _known() -> str:
    return ", ".join(sorted(PROVIDERS))


def _model_class(provider: str) -> Callable[..., Any]:
    module_name, class_name = PROVIDERS[provider]
    return getattr(importlib.import_module(module_name), class_name)


def parse_model_id(spec: Any, *, field: str = "model") -> tuple[str, str]:
    """``"provider/model"`` → ``(provider, model)``; raises :class:`AgentConfigError` if malformed."""
    if not isinstance(spec, str):
        raise AgentConfigError(field, f"a model id must be a string 'provider/model', not {type(spec).__name__} "
                                      f"{spec!r} (known providers: {_known()})")
    provider, _, model = spec.partition("/")
    if not provider or not model:
        raise AgentConfigError(field, f"{spec!r} is not a model id; expected 'provider/model', "
                                      f"e.g. 'openai/gpt-4o' (known providers: {_known()})")
    if provider not in PROVIDERS:
        raise AgentConfigError(field, f"unknown model provider {provider!r} in {spec!r} (known providers: {_known()})")
    if provider == "local" and model not in LOCAL_MODELS:
        raise AgentConfigError(field, f"unknown local model {model!r} in {spec!r} "
                                      f"(local models: {', '.join(LOCAL_MODELS)})")
    return provider, model


def _build(provider: str, model: str, options: dict) -> Any:
    return _model_class(provider)(model, **options)


def _from_dict(spec: dict, field: str) -> Any:
    names = snake_keys(spec)
    if "id" in names:
        model_id = names["id"]
    else:
        provider, model = names.get("provider_id"), names.get("model_id")
        if provider is None or model is None:
            raise AgentConfigError(field, "a model config dict needs 'id': 'provider/model' "
                                          f"(or 'providerId' and 'modelId'); got keys {sorted(spec)}")
        model_id = f"{provider}/{model}"
    provider, model = parse_model_id(model_id, field=f"{field}.id")
    allowed = _LOCAL_KEYS if provider == "local" else _CONNECTION_KEYS
    options: dict = {}
    for key, value in spec.items():
        name = snake_case(key) if isinstance(key, str) else key
        if name in _ID_KEYS:
            continue
        if name not in allowed:
            raise AgentConfigError(field, f"unknown key {key!r} in the config of {model_id!r} "
                                          f"(allowed: {', '.join(['id', *allowed])})")
        if value is not None:
            options[allowed[name]] = value
    if "headers" in options and not isinstance(options["headers"], dict):
        raise AgentConfigError(f"{field}.headers", "headers must be a dict of strings")
    timeout = options.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise AgentConfigError(f"{field}.timeout", "must be a positive number of seconds")
    return _built_once(provider, model, options)


def _built_once(provider: str, model: str, options: dict) -> Any:
    """The model of a config dict, the same object for the same settings (an agent whose model is
    a dict resolves it on every run): it keeps its SDK clients, so a run reuses the connections of
    the runs before it instead of opening (and handshaking) one of its own."""
    try:
        key = (provider, model, tuple(sorted(
            (name, tuple(sorted(value.items())) if isinstance(value, dict) else value)
            for name, value in options.items())))
        hash(key)
    except TypeError:  # a value that cannot be a key (headers of lists, say): built each time
        return _build(provider, model, options)
    cached = _config_cache.get(key)
    if cached is not None:
        _config_cache.move_to_end(key)
        return cached
    built = _config_cache[key] = _build(provider, model, options)
    while len(_config_cache) > CONFIG_CACHE_SIZE:
        _config_cache.popitem(last=False)
    return built


def resolve_model(spec: Any, *, field: str = "model") -> Any:
    """The model object for ``spec`` (see the module docstring); ``field`` names it in errors."""
    if isinstance(spec, str):
        cached = _cache.get(spec)
        if cached is None:
            provider, model = parse_model_id(spec, field=field)
            cached = _cache.setdefault(spec, _build(provider, model, {}))
        return cached
    if isinstance(spec, dict):
        return _from_dict(spec, field)
    if callable(getattr(spec, "stream", None)):
        missing = [name for name in ("provider", "model_id") if not hasattr(spec, name)]
        if missing:
            raise AgentConfigError(field, f"a model object needs {' and '.join(missing)} besides stream()")
        return spec
    raise AgentConfigError(field, f"expected a 'provider/model' string, a model config dict or a model object, "
                                  f"not {type(spec).__name__} {spec!r} (known providers: {_known()})")


def clear_model_cache() -> None:
    """Forget the models resolved from strings and config dicts (for tests and credential rotation)."""
    _cache.clear()
    _config_cache.clear()
