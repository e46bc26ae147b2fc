"""Who may pick a run's model: the one rule for the options of a request over HTTP or the chat
websocket (docs/security.md, "Who may pick a model").

- A request never sets a model connection. A base URL, headers, a key, an organisation or a
  project anywhere in a model config (the ``model`` option as an object, ``structured_output.model``,
  ``memory.options.generate_title.model``), ``model_settings.headers``, or such an entry anywhere in
  ``provider_options`` (``structured_output.provider_options`` too) is
  :class:`ModelConnectionForbidden` (``model_connection_forbidden``, 400). The connection is the
  site's: its environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ...) and the agent's ``model``.
- A request names a model by its id string only (any other value: ``invalid_model``, 400), and
  only an id its agent lists in ``Agent(caller_models=[...])``; a staff user holding the
  permission ``agents.choose_any_model`` may name any id. Else :class:`ModelForbidden`
  (``model_forbidden``, 403). A fallback chain (``model: ["openai/gpt-4o", {"model":
  "anthropic/claude-sonnet-4-5", "maxRetries": 1, "enabled": true}]``) is checked entry by entry
  under the same rule: each entry's model is an id string the caller may pick.
- A caller's structured output schema is compiled here, so that a ``$ref`` outside the schema is
  ``invalid_schema`` (400) before anything is stored (``agents.runtime.tools.Schema`` never fetches).

Python callers of ``agent.generate()`` are trusted and may pass any model config.
"""

from __future__ import annotations

from typing import Any

from agents.connections import async_twin
from agents.runtime.errors import MastraError
from agents.runtime.naming import camel_case
from agents.runtime.redaction import CREDENTIAL_KEYS
from agents.runtime.tools import Schema

#: the Django permission that lets a staff user pick any model id
PERMISSION = "agents.choose_any_model"

#: key names (compared without case, ``-`` and ``_``) that say where or how a provider is reached
CONNECTION_KEYS = CREDENTIAL_KEYS | frozenset({
    "url", "baseurl", "apibase", "apiurl", "endpoint", "host", "proxy", "organization", "organisation",
    "organizationid", "org", "orgid", "project", "projectid", "defaultheaders", "extraheaders", "extraquery",
    "httpclient", "authtoken", "bearertoken"})

FORBIDDEN_CONNECTION = ("a request may not set a model connection (base URL, headers, keys); "
                        "name a model by its id, e.g. 'openai/gpt-4o'")


class ModelConnectionForbidden(MastraError):
    code = "model_connection_forbidden"


class ModelForbidden(MastraError):
    code = "model_forbidden"


class InvalidModel(MastraError):
    code = "invalid_model"


def _is_connection_key(name: Any) -> bool:
    return isinstance(name, str) and name.lower().replace("-", "").replace("_", "") in CONNECTION_KEYS


def connection_setting(value: Any, path: str) -> str | None:
    """The path (``path.key...``) of the first connection entry in ``value`` at any depth, or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            if _is_connection_key(key):
                return f"{path}.{key}"
            found = connection_setting(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = connection_setting(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def model_choices(options: dict, prefix: str = "") -> list[tuple[str, Any]]:
    """``(wire path, value)`` of every model the (snake_case) call options name."""
    choices = []
    model = options.get("model")
    if isinstance(model, list):  # a fallback chain: every entry is a choice of its own
        for index, entry in enumerate(model):
            if isinstance(entry, dict) and "model" in entry:
                choices.append((f"{prefix}model[{index}].model", entry["model"]))
            else:
                choices.append((f"{prefix}model[{index}]", entry))
    elif model is not None:
        choices.append((f"{prefix}model", model))
    structured = options.get("structured_output")
    if isinstance(structured, dict) and structured.get("model") is not None:
        choices.append((f"{prefix}structuredOutput.model", structured["model"]))
    memory = options.get("memory")
    memory_options = memory.get("options") if isinstance(memory, dict) else None
    title = memory_options.get("generate_title") if isinstance(memory_options, dict) else None
    if isinstance(title, dict) and title.get("model") is not None:
        choices.append((f"{prefix}memory.options.generateTitle.model", title["model"]))
    return choices


def connection_check(options: dict, prefix: str = "") -> None:
    """Raise :class:`ModelConnectionForbidden` when the options set a connection anywhere."""
    places = [(path, value) for path, value in model_choices(options, prefix) if isinstance(value, dict)]
    if isinstance(options.get("model"), list):  # a chain entry's own settings and provider options
        places.append((f"{prefix}model", options["model"]))
    for name in ("model_settings", "provider_options"):
        places.append((f"{prefix}{camel_case(name)}", options.get(name)))
    structured = options.get("structured_output")
    if isinstance(structured, dict):
        places.append((f"{prefix}structuredOutput.providerOptions", structured.get("provider_options")))
    for path, value in places:
        found = connection_setting(value, path)
        if found is not None:
            raise ModelConnectionForbidden(f"{found}: {FORBIDDEN_CONNECTION}")


def may_choose_any_model(user: Any) -> bool:
    """True for an active staff user holding :data:`PERMISSION` (a database read: call it sync)."""
    return bool(user is not None and user.is_active and user.is_staff and user.has_perm(PERMISSION))


async def amodel_choice_check(options: dict, *, agent: Any, user: Any, prefix: str = "") -> None:
    """Refuse what a caller over HTTP or the websocket may not set in the (snake_case) call
    ``options`` of a run of ``agent`` (the module docstring); ``prefix`` names where the options
    sit in the body (``"ifIdle.streamOptions."``). Returns None when the options may run.

    Raises :class:`ModelConnectionForbidden` (400), :class:`InvalidModel` (400),
    :class:`ModelForbidden` (403) and ``AgentConfigError`` with code ``invalid_schema`` (400).
    Reads the database only to check the permission, and only when a model outside the agent's
    ``caller_models`` is named."""
    connection_check(options, prefix)
    refused = []
    for path, value in model_choices(options, prefix):
        if not isinstance(value, str):
            raise InvalidModel(f"{path}: name a model by its id string, e.g. 'openai/gpt-4o'")
        if value not in agent.caller_models:
            refused.append((path, value))
    if refused and not await async_twin(may_choose_any_model)(user):
        path, value = refused[0]
        raise ModelForbidden(f"{path}: agent {agent.id!r} does not let callers choose the model {value!r}")
    structured = options.get("structured_output")
    if isinstance(structured, dict) and isinstance(structured.get("schema"), dict):
        Schema(structured["schema"], field_name=f"{prefix}structuredOutput.schema")


__all__ = ["PERMISSION", "InvalidModel", "ModelConnectionForbidden", "ModelForbidden", "amodel_choice_check",
           "may_choose_any_model"]
