"""Agent signals: validation, normalisation and the XML the model sees (DESIGN §4).

A *signal* is the dict every thread input becomes::

    {"id", "type", "tagName", "contents", "attributes", "metadata", "providerOptions", "transient",
     "createdAt", "acceptedAt"}

``type`` is one of ``user``, ``state``, ``reactive``, ``notification``; the legacy ``user-message``
and ``system-reminder`` are normalised. :func:`render_signal` turns a signal into the model message
(role ``user``) the next model step receives, by Mastra's rules (``signals.ts``): a user signal
without attributes is its plain contents; otherwise all-text contents become one tag (parts joined
by a newline) and multimodal contents get the tag on each text part (Mastra: on the first only; or,
without one, a self-closing tag before the other parts). Validation messages are Mastra's, word for word.

Beyond Mastra (docs/security.md): names must match in full (a trailing newline is refused),
attribute values may not hold C0 control characters, a caller's signal id is at most 64 safe
characters, and a whole signal is capped in size and attributes (:mod:`.limits`).

A ``transient`` signal reaches the model and is echoed to subscribers, but is never stored in the
thread's history (:func:`is_transient_message`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .chunks import data_chunk
from .errors import SignalError
from .limits import current_limits
from .messages import new_id, now_iso
from .naming import snake_keys

SIGNAL_TYPES = ("user", "state", "reactive", "notification")
LEGACY_TYPES = {"user-message": ("user", "user"), "system-reminder": ("reactive", "system-reminder")}
DEFAULT_TAGS = {"user": "user", "state": "state", "notification": "notification", "reactive": "system-reminder"}
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
#: a caller-supplied signal id: 1 to 64 of these characters (the id columns hold 64)
SIGNAL_ID_RE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
#: C0 control characters and DEL: refused in attribute values (tab, newline and CR included)
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
PART_TYPES = ("text", "image", "file")

_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTR_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})
_MESSAGE_KEYS = frozenset({"contents", "attributes", "metadata", "provider_options", "id"})

# ``state_to_signal`` reads its payload's keys through this name


def escape_text(value: str) -> str:
    return value.translate(_TEXT_ESCAPES)


def escape_attribute(value: str) -> str:
    return value.translate(_ATTR_ESCAPES)


def attribute_text(value: Any) -> str:
    """Stringify an attribute value as JavaScript would (``true``, ``1`` for ``1.0``)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def check_name(name: Any, what: str) -> str:
    """``name`` if it is a valid XML name; otherwise Mastra's ``Invalid signal XML tag name: <name>``
    (``what`` is ``"tag"`` or ``"attribute"``)."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        code = "invalid_tag_name" if what == "tag" else "invalid_attribute_name"
        raise SignalError(f"Invalid signal XML {what} name: {name}", code=code)
    return name


def check_attributes(attributes: Any, where: str = "attributes") -> dict:
    """A copy of ``attributes``; names are checked only for values that are not ``None`` (a
    ``None`` value is never rendered, as in Mastra, so its name cannot be wrong)."""
    if attributes is None:
        return {}
    if not isinstance(attributes, dict):
        raise SignalError(f"{where} must be a dict", code="invalid_attributes")
    limit = current_limits().max_attributes
    if len(attributes) > limit:
        raise SignalError(f"{where}: more than {limit} attributes", code="too_many_attributes")
    for name, value in attributes.items():
        if value is None:
            continue
        check_name(name, "attribute")
        if not isinstance(value, (str, int, float, bool)):
            raise SignalError(f"{where}.{name}: values must be str, number, bool or None, not {type(value).__name__}",
                              code="invalid_attribute_value")
        if isinstance(value, float) and not math.isfinite(value):
            raise SignalError(f"{where}.{name}: numbers must be finite", code="invalid_attribute_value")
        if isinstance(value, str) and CONTROL_RE.search(value):
            raise SignalError(f"{where}.{name}: control characters are not allowed in attribute values",
                              code="invalid_attribute_value")
    return dict(attributes)


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (what the size caps count); values JSON cannot
    write count as their ``str()``."""
    return len(json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":")).encode())


def check_size(value: Any, what: str) -> None:
    """Raise ``SignalError`` (``signal_too_large``) when ``value`` is over the size cap."""
    limit = current_limits().max_signal_bytes
    if json_size(value) > limit:
        raise SignalError(f"{what} is larger than {limit} bytes", code="signal_too_large")


def check_signal_id(value: Any) -> str:
    """A caller's signal id: a string of 1 to 64 letters, digits, ``_ . : -``."""
    if not isinstance(value, str) or not SIGNAL_ID_RE.fullmatch(value):
        raise SignalError("a signal id must be a string of 1 to 64 letters, digits, '_', '.', ':' or '-'",
                          code="invalid_signal_id")
    return value


def check_contents(contents: Any) -> Any:
    """Contents as a string or a list of parts. A list holding one text part without provider
    options is that part's text (Mastra stores and echoes it so)."""
    if contents is None:
        return ""
    if isinstance(contents, str):
        pass
    elif isinstance(contents, list):
        for part in contents:
            if isinstance(part, str):
                continue
            if not isinstance(part, dict) or part.get("type") not in PART_TYPES:
                raise SignalError("contents parts must be strings or {'type': 'text'|'image'|'file', ...} dicts",
                                  code="invalid_contents")
            if part["type"] == "text" and not isinstance(part.get("text"), str):
                raise SignalError("a text part needs a string 'text'", code="invalid_contents")
        contents = [{"type": "text", "text": p} if isinstance(p, str) else p for p in contents]
        if len(contents) == 1 and contents[0]["type"] == "text" and not contents[0].get("providerOptions"):
            contents = contents[0]["text"]
    else:
        raise SignalError("contents must be a string or a list of parts", code="invalid_contents")
    return contents


def create_signal(signal: dict, *, extra_attributes: dict | None = None) -> dict:
    """Validate and normalise a ``send_signal`` payload; merge branch attributes over its own.

    Keys may be camelCase or snake_case. Raises :class:`SignalError` with Mastra's messages
    (``Invalid signal type: …``, ``Invalid signal XML tag name: …``, ``state signals cannot be
    transient``)."""
    if not isinstance(signal, dict):
        raise SignalError("a signal must be a dict with 'type' and 'contents'", code="invalid_signal")
    signal = snake_keys(signal)
    kind = signal.get("type")
    tag = signal.get("tag_name")
    if kind in LEGACY_TYPES:
        kind, legacy_tag = LEGACY_TYPES[kind]
        tag = legacy_tag if tag is None else tag
    if kind not in SIGNAL_TYPES:
        raise SignalError(f"Invalid signal type: {kind}. Use a supported signal type and set tagName for custom "
                          "XML tags.", code="invalid_signal_type")
    transient = signal.get("transient")
    if kind == "state" and transient is not None:
        raise SignalError("state signals cannot be transient", code="invalid_state_signal")
    if transient is not None and not isinstance(transient, bool):
        raise SignalError("transient must be true or false", code="invalid_signal")
    # an explicit tag_name (even "") is validated; only a missing one takes the type's default
    tag = check_name(DEFAULT_TAGS[kind] if tag is None else tag, "tag")
    attributes = check_attributes(signal.get("attributes"))
    if extra_attributes:
        attributes.update(check_attributes(extra_attributes, "branch attributes"))
    metadata = signal.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise SignalError("metadata must be a dict", code="invalid_metadata")
    po = signal.get("provider_options")
    if po is not None and not isinstance(po, dict):
        raise SignalError("provider_options must be a dict", code="invalid_provider_options")
    signal_id = signal.get("id")
    out = {"id": new_id() if signal_id is None else check_signal_id(signal_id), "type": kind, "tagName": tag,
           "contents": check_contents(signal.get("contents")), "attributes": attributes,
           "metadata": dict(metadata or {}), "createdAt": signal.get("created_at") or now_iso()}
    if po:
        out["providerOptions"] = po
    if transient:
        out["transient"] = True
    check_size({k: out[k] for k in ("contents", "attributes", "metadata", "providerOptions") if k in out},
               "the signal")
    return out


def message_to_signal(message: Any, *, extra_attributes: dict | None = None) -> dict:
    """A ``send_message`` input (str, parts or ``{contents, attributes, metadata, provider_options}``)
    as a ``user`` signal."""
    if isinstance(message, (str, list)):
        return create_signal({"type": "user", "contents": message}, extra_attributes=extra_attributes)
    if isinstance(message, dict):
        message = snake_keys(message)
        unknown = set(message) - _MESSAGE_KEYS
        if unknown:
            raise SignalError(f"unknown message key {sorted(unknown, key=str)[0]!r}", code="invalid_message")
        if "contents" not in message:
            raise SignalError("a message dict needs 'contents'", code="invalid_message")
        return create_signal({"type": "user", **message}, extra_attributes=extra_attributes)
    raise SignalError("a message must be a string, a list of parts or a dict with 'contents'", code="invalid_message")


def render_tag(tag: str, attributes: dict, text: str) -> str:
    """``<tag a="1">text</tag>``, or ``<tag a="1" />`` for empty text; ``None`` values are left out."""
    attrs = "".join(f' {name}="{escape_attribute(attribute_text(value))}"'
                    for name, value in attributes.items() if value is not None)
    if text == "":
        return f"<{tag}{attrs} />"
    return f"<{tag}{attrs}>{escape_text(text)}</{tag}>"


def render_content(signal: dict) -> Any:
    """The content the model sees (Mastra's ``toLLMMessage``).

    * a user signal without (non-``None``) attributes: its contents as they are (a string, or the
      list of parts when there are several);
    * all-text contents without per-part provider options: one tag, the texts joined by a newline;
    * otherwise (images, files, per-part provider options) every text part is escaped and wrapped
      in the tag, each on its own, and the other parts are kept; without a text part, a
      self-closing tag comes first as a text part. Mastra wraps only the first text part and passes
      the later ones to the model as they are: a later part could then carry third-party text that
      poses as the user's own words (docs/security.md).
    """
    attributes = signal.get("attributes") or {}
    contents = signal["contents"]
    tag = signal["tagName"]
    plain = signal["type"] == "user" and not any(v is not None for v in attributes.values())
    if isinstance(contents, str):
        return contents if plain else render_tag(tag, attributes, contents)
    if plain:
        return contents
    if all(p["type"] == "text" and not p.get("providerOptions") for p in contents):
        return render_tag(tag, attributes, "\n".join(p["text"] for p in contents))
    content = [{**part, "text": render_tag(tag, attributes, part["text"])} if part["type"] == "text" else part
               for part in contents]
    if not any(part["type"] == "text" for part in contents):
        content.insert(0, {"type": "text", "text": render_tag(tag, attributes, "")})
    return content


def render_signal(signal: dict) -> dict:
    """The model message (role ``user``) for a signal. A stored signal carries its ``rendered``
    content from acceptance time (stored JSON may reorder the attributes; the string keeps them)."""
    content = signal["rendered"] if "rendered" in signal else render_content(signal)
    message = {"id": signal["id"], "role": "user", "content": content, "createdAt": signal["createdAt"],
               "type": "signal", "metadata": {"signal": signal_summary(signal)}}
    if signal.get("providerOptions"):
        message["providerOptions"] = signal["providerOptions"]
    return message


def is_transient_message(message: dict) -> bool:
    """Whether ``message`` renders a ``transient`` signal: memory stores never save it."""
    meta = message.get("metadata")
    if not meta:
        return False
    summary = meta.get("signal")
    return isinstance(summary, dict) and summary.get("transient") is True


def signal_summary(signal: dict) -> dict:
    """What is stored with the message and echoed to subscribers."""
    data = {"id": signal["id"], "type": signal["type"], "tagName": signal["tagName"],
            "contents": signal["contents"], "createdAt": signal["createdAt"],
            "acceptedAt": signal.get("acceptedAt")}
    if signal.get("attributes"):
        data["attributes"] = signal["attributes"]
    if signal.get("metadata"):
        data["metadata"] = signal["metadata"]
    if signal.get("transient"):
        data["transient"] = True
    return data


#: what a signal carries only when it was given one (:func:`signal_wire`)
_GIVEN_ONLY = frozenset({"attributes", "metadata", "providerOptions", "transient"})


def signal_wire(signal: dict | None) -> dict | None:
    """``signal`` as an answer shows it: as Mastra's server, without the attributes, metadata,
    provider options or ``transient`` it was not given (Mastra's are undefined there, not empty)."""
    if signal is None:
        return None
    return {key: value for key, value in signal.items() if value or key not in _GIVEN_ONLY}


def echo_chunk(signal: dict, run_id: str | None) -> dict:
    """The transient echo subscribers see when an input is accepted (DESIGN §5)."""
    kind = "data-user-message" if signal["type"] == "user" else "data-signal"
    return data_chunk(kind, run_id, signal_summary(signal))


STATE_MODES = ("snapshot", "delta")


def state_to_signal(state: dict) -> tuple[dict, dict]:
    """A ``send_state_signal`` payload as a ``state`` signal plus its tracking key ``{id, cache_key, mode}``.

    As Mastra's ``createStateSignalInput``: the model sees only the caller's own attributes
    (``<state tabs="3">contents</state>``; a caller's own ``id`` attribute is kept); the state id,
    cache key and mode are tracking data in ``metadata.state``, and ``value`` / ``delta`` (when
    given) sit beside it in the metadata. The signal's id is a fresh one, never the state id.
    """
    if not isinstance(state, dict):
        raise SignalError("a state signal must be a dict", code="invalid_state_signal")
    state = snake_keys(state)
    unknown = set(state) - {"id", "cache_key", "mode", "contents", "value", "delta", "attributes", "metadata",
                            "tag_name", "provider_options", "transient"}
    if unknown:
        raise SignalError(f"unknown state signal key {sorted(unknown)[0]!r}", code="invalid_state_signal")
    if state.get("transient"):
        raise SignalError("state signals cannot be transient", code="invalid_state_signal")
    state_id, cache_key = state.get("id"), state.get("cache_key")
    if not state_id:
        raise SignalError("state signal id is required", code="invalid_state_signal")
    if not cache_key:
        raise SignalError("state signal cacheKey is required", code="invalid_state_signal")
    if not isinstance(state_id, str) or not isinstance(cache_key, str):
        raise SignalError("state signal id and cacheKey must be strings", code="invalid_state_signal")
    mode = state.get("mode") or "snapshot"
    if mode not in STATE_MODES:
        raise SignalError("mode must be 'snapshot' or 'delta'", code="invalid_state_signal")
    metadata = state.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise SignalError("metadata must be a dict", code="invalid_metadata")
    try:
        json.dumps([state.get("value"), state.get("delta")])
    except (TypeError, ValueError):
        raise SignalError("value and delta must be JSON-serialisable", code="invalid_state_signal") from None
    own_state = metadata.get("state") if isinstance(metadata.get("state"), dict) else {}
    tracking = {**metadata, "state": {**own_state, "id": state_id, "cacheKey": cache_key, "mode": mode}}
    for name in ("value", "delta"):
        if state.get(name) is not None:
            tracking[name] = state[name]
    tag = state.get("tag_name")
    signal = create_signal({
        "type": "state", "tag_name": "state" if tag is None else tag, "contents": state.get("contents"),
        "attributes": state.get("attributes"), "metadata": tracking,
        "provider_options": state.get("provider_options"),
    })
    return signal, {"id": state_id, "cache_key": cache_key, "mode": mode}
