"""Mastra's stored message format (``MastraDBMessage``, ``content.format == 2``) and the runtime's
model messages (:mod:`.messages`), both ways.

A thread's history is stored as Mastra stores it, so that ``@mastra/client-js`` and code written for
Mastra read ``content.parts``::

    {"id", "role": "user" | "assistant" | "system" | "signal", "createdAt", "type"?,
     "content": {"format": 2, "parts": [...], "content"?: str, "metadata"?: {...},
                 "providerMetadata"?: {...}}}

(the stores add ``threadId`` and ``resourceId``). Parts, as Mastra writes them:

- ``{"type": "text", "text", "providerMetadata"?}``
- ``{"type": "reasoning", "reasoning", "details": [{"type": "text", "text"}], "providerMetadata"?}``
- ``{"type": "tool-invocation", "toolInvocation": {"state": "call" | "result", "toolCallId", "toolName",
  "args", "result"?, "isError"?}}``: a call and, once it has one, its result (a tool call's result is
  kept on the assistant message that made the call: there is no ``tool`` role); a call suspended on
  an approval or by its tool also carries ``"suspended": {...}`` (what a resumed run needs)
- ``{"type": "file", "data", "mimeType", "filename"?, "providerMetadata"?}`` (an image part is a
  file part with an ``image/…`` type, as in Mastra)

A signal is a message of role ``signal`` whose ``type`` is its tag and whose parts are its
*contents* (not the XML), with ``content.metadata.signal = {id, type, tagName, createdAt,
acceptedAt?, attributes?, metadata?}`` (Mastra's ``toDBMessage``). The XML is rendered when the
prompt is built (:func:`to_model_messages` calls :func:`.signal.render_signal`), so the model sees a
stored signal exactly as it saw it when it was accepted.

Model messages stored in the old shape (a string or a list of parts as ``content``) are read as
they are.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Iterable

from .providers.chain import label_parts
from .signal import is_transient_message, render_signal

FORMAT = 2
#: the stored roles (Mastra's ``MastraDBMessage``)
STORED_ROLES = ("user", "assistant", "system", "signal")
#: what :func:`answers_stamped` adds to an answer's ``content.metadata``
ANSWER_STAMP = ("agentId", "runId", "modelId", "provider")
#: an image part without a media type is stored with this one
IMAGE_ANY = "image/*"


_ATOMS = frozenset((str, int, float, bool, type(None)))


def json_copy(value: Any) -> Any:
    """A deep copy of ``value``. The data of messages (dicts, lists, text, numbers, booleans, None)
    is copied by a plain recursion, three times faster than ``copy.deepcopy`` (a stored message:
    6.6 µs against 19.4 µs); anything else, and a structure that holds itself, by ``copy.deepcopy``.
    Two references to one dict become two copies (JSON has no shared values)."""
    try:
        return _json_copy(value)
    except RecursionError:
        return copy.deepcopy(value)


def _json_copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


def is_stored(message: Any) -> bool:
    """Whether ``message`` is in Mastra's stored format (``content`` is a format-2 object)."""
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, dict) and content.get("format") == FORMAT and isinstance(content.get("parts"), list)


# -- parts ---------------------------------------------------------------------------------------

def _with_provider(out: dict, part: dict) -> dict:
    po = part.get("providerOptions")
    if po:
        out["providerMetadata"] = po
    return out


def _media_part_to_stored(part: dict) -> dict:
    """A model ``file`` or ``image`` part as Mastra's stored ``file`` part."""
    if part["type"] == "image":
        data = part.get("image", part.get("data", part.get("url")))
        mime = part.get("mimeType") or part.get("mediaType") or IMAGE_ANY
    else:
        data = part.get("data", part.get("url"))
        mime = part.get("mimeType") or part.get("mediaType") or "application/octet-stream"
    out = {"type": "file", "data": data, "mimeType": mime}
    if part.get("filename"):
        out["filename"] = part["filename"]
    return _with_provider(out, part)


def _media_part_to_model(part: dict) -> dict:
    mime = part.get("mimeType") or part.get("mediaType") or ""
    if mime.startswith("image/") and not part.get("filename"):
        out = {"type": "image", "image": part.get("data")}
        if mime != IMAGE_ANY:
            out["mimeType"] = mime
    else:
        out = {"type": "file", "data": part.get("data"), "mimeType": mime}
        if part.get("filename"):
            out["filename"] = part["filename"]
    if part.get("providerMetadata"):
        out["providerOptions"] = part["providerMetadata"]
    return out


def _part_to_stored(part: Any) -> dict:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    kind = part.get("type")
    if kind == "text":
        return _with_provider({"type": "text", "text": part.get("text", "")}, part)
    if kind == "reasoning":
        detail = {"type": "text", "text": part.get("text", "")}
        if part.get("signature"):
            detail["signature"] = part["signature"]
        return _with_provider({"type": "reasoning", "reasoning": part.get("text", ""), "details": [detail]}, part)
    if kind in ("image", "file"):
        return _media_part_to_stored(part)
    if kind == "tool-call":
        invocation = {"state": "call", "toolCallId": part.get("toolCallId"), "toolName": part.get("toolName"),
                      "args": json_copy(part.get("args"))}
        out = {"type": "tool-invocation", "toolInvocation": invocation}
        if part.get("suspended") is not None:
            out["suspended"] = json_copy(part["suspended"])
        if part.get("providerExecuted") is not None:
            out["providerExecuted"] = part["providerExecuted"]
        return _with_provider(out, part)
    return json_copy(part)  # a part Mastra has no stored form for is kept as it is


def _part_to_model(part: dict) -> dict | None:
    kind = part.get("type")
    if kind == "text":
        out = {"type": "text", "text": part.get("text", "")}
    elif kind == "reasoning":
        text = part.get("reasoning")
        details = part.get("details") or []
        if text is None:
            text = "".join(d.get("text", "") for d in details if isinstance(d, dict))
        out = {"type": "reasoning", "text": text}
        signature = next((d.get("signature") for d in details if isinstance(d, dict) and d.get("signature")), None)
        if signature:
            out["signature"] = signature
    elif kind == "file":
        return _media_part_to_model(part)
    elif kind == "tool-invocation":
        inv = part.get("toolInvocation") or {}
        out = {"type": "tool-call", "toolCallId": inv.get("toolCallId"), "toolName": inv.get("toolName"),
               "args": json_copy(inv.get("args"))}
        if part.get("suspended") is not None:
            out["suspended"] = json_copy(part["suspended"])
        if part.get("providerExecuted") is not None:
            out["providerExecuted"] = part["providerExecuted"]
    elif kind == "step-start":
        return None
    else:
        return json_copy(part)
    if part.get("providerMetadata"):
        out["providerOptions"] = part["providerMetadata"]
    return out


def _text_of_parts(parts: list[dict]) -> str:
    return "".join(p.get("text", "") for p in parts if p.get("type") == "text")


# -- signals -------------------------------------------------------------------------------------

def signal_meta(signal: dict) -> dict:
    """``content.metadata.signal`` of a stored signal: what Mastra keeps beside the parts."""
    data = {"id": signal["id"], "type": signal["type"], "tagName": signal["tagName"],
            "createdAt": signal["createdAt"]}
    if signal.get("acceptedAt"):
        data["acceptedAt"] = signal["acceptedAt"]
    if signal.get("attributes"):
        data["attributes"] = json_copy(signal["attributes"])
    if signal.get("metadata"):
        data["metadata"] = json_copy(signal["metadata"])
    if signal.get("transient"):
        data["transient"] = True
    return data


def signal_to_stored(signal: dict) -> dict:
    """A signal as Mastra stores it (``toDBMessage``): role ``signal``, ``type`` its tag, its
    contents as parts (an empty one as one empty text part)."""
    contents = signal.get("contents")
    if isinstance(contents, str):
        parts = [{"type": "text", "text": contents}]
    else:
        parts = [_part_to_stored(p) for p in contents or []] or [{"type": "text", "text": ""}]
    content: dict = {"format": FORMAT, "parts": parts, "metadata": {"signal": signal_meta(signal)}}
    if signal.get("providerOptions"):
        content["providerMetadata"] = json_copy(signal["providerOptions"])
    return {"id": signal["id"], "role": "signal", "type": signal["tagName"], "createdAt": signal["createdAt"],
            "content": content}


def stored_to_signal(message: dict) -> dict:
    """The signal a stored ``signal`` message holds (Mastra's ``mastraDBMessageToSignal``); the
    contents are a string when they are one text part without provider metadata."""
    content = message["content"]
    meta = dict((content.get("metadata") or {}).get("signal") or {})
    parts = [p for p in (_part_to_model(p) for p in content.get("parts") or []) if p is not None]
    if len(parts) == 1 and parts[0]["type"] == "text" and not parts[0].get("providerOptions"):
        contents: Any = parts[0]["text"]
    else:
        contents = parts
    tag = meta.get("tagName") or message.get("type") or "user"
    signal = {"id": meta.get("id") or message["id"], "type": meta.get("type") or "user", "tagName": tag,
              "contents": contents, "attributes": dict(meta.get("attributes") or {}),
              "metadata": dict(meta.get("metadata") or {}), "createdAt": meta.get("createdAt") or message.get("createdAt"),
              "acceptedAt": meta.get("acceptedAt")}
    if content.get("providerMetadata"):
        signal["providerOptions"] = content["providerMetadata"]
    if meta.get("transient"):
        signal["transient"] = True
    return signal


def is_signal_message(message: dict) -> bool:
    """A model message rendered from a signal (:func:`.signal.render_signal`)."""
    return message.get("type") == "signal" and isinstance((message.get("metadata") or {}).get("signal"), dict)


#: an opening tag and the attribute names in it, in order
_OPENING_RE = re.compile(r"<[A-Za-z_][A-Za-z0-9_.-]*((?:\s[A-Za-z_][A-Za-z0-9_.-]*=\"[^\"]*\")*)\s*/?>")
_ATTRIBUTE_RE = re.compile(r'\s([A-Za-z_][A-Za-z0-9_.-]*)="')


def attribute_order(content: Any) -> list[str]:
    """The attribute names of the tag a rendered signal starts with, in the order the model saw
    them (``content`` a string, or parts whose first text part holds the tag)."""
    if isinstance(content, list):
        content = next((p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"), "")
    match = _OPENING_RE.match(content) if isinstance(content, str) else None
    return _ATTRIBUTE_RE.findall(match.group(1)) if match else []


def in_order(attributes: dict, order: list[str]) -> dict:
    """``attributes`` with the names of ``order`` first, in that order."""
    ranked = {name: attributes[name] for name in order if name in attributes}
    ranked.update((name, value) for name, value in attributes.items() if name not in ranked)
    return ranked


def _model_signal(message: dict) -> dict:
    """The signal behind a rendered signal message (its summary holds everything but the XML; a
    summary read back from PostgreSQL's ``jsonb`` lost the order of its attributes, which the
    XML keeps)."""
    summary = message["metadata"]["signal"]
    attributes = summary.get("attributes") or {}
    if len(attributes) > 1:
        attributes = in_order(attributes, attribute_order(message.get("content")))
    signal = {"id": summary.get("id") or message["id"], "type": summary.get("type") or "user",
              "tagName": summary.get("tagName") or "user", "contents": summary.get("contents", ""),
              "attributes": attributes, "metadata": summary.get("metadata") or {},
              "createdAt": summary.get("createdAt") or message.get("createdAt"),
              "acceptedAt": summary.get("acceptedAt")}
    if message.get("providerOptions"):
        signal["providerOptions"] = message["providerOptions"]
    if summary.get("transient"):
        signal["transient"] = True
    return signal


# -- model messages → stored ---------------------------------------------------------------------

def _base(message: dict, role: str) -> dict:
    out = {"id": message.get("id"), "role": role, "createdAt": message.get("createdAt")}
    return out


def _plain_to_stored(message: dict) -> dict:
    """A user or system message (not a signal)."""
    raw = message.get("content")
    content: dict = {"format": FORMAT}
    if isinstance(raw, str):
        content["parts"] = [{"type": "text", "text": raw}]
        content["content"] = raw
    else:
        content["parts"] = [_part_to_stored(p) for p in raw or []]
    if message.get("metadata"):
        content["metadata"] = json_copy(message["metadata"])
    if message.get("providerOptions"):
        content["providerMetadata"] = json_copy(message["providerOptions"])
    out = _base(message, message["role"])
    if message.get("type"):
        out["type"] = message["type"]
    out["content"] = content
    return out


def _assistant_to_stored(message: dict) -> dict:
    raw = message.get("content")
    parts = [{"type": "text", "text": raw}] if isinstance(raw, str) else [_part_to_stored(p) for p in raw or []]
    content: dict = {"format": FORMAT, "parts": parts}
    text = "\n".join(p["text"] for p in parts if p.get("type") == "text" and p.get("text"))
    if text:  # Mastra's ``content.content``: the answer's text parts, one line apart
        content["content"] = text
    if message.get("metadata"):
        content["metadata"] = json_copy(message["metadata"])
    if message.get("providerOptions"):
        content["providerMetadata"] = json_copy(message["providerOptions"])
    out = _base(message, "assistant")
    if message.get("type"):
        out["type"] = message["type"]
    out["content"] = content
    return out


def _result_into(invocation: dict, result: dict) -> None:
    invocation["state"] = "result"
    invocation["result"] = json_copy(result.get("result"))
    if "isError" in result:
        invocation["isError"] = result["isError"]


def to_stored_messages(messages: Iterable[dict], *, earlier: Iterable[dict] = ()) -> list[dict]:
    """``messages`` (model messages, in order) as Mastra stores them.

    A tool message's results go into the tool-invocation parts of the assistant message that made
    the calls. When that message is in ``earlier`` (the messages of the thread already stored: a
    run that resumes after an approval stores the result after the call), it is returned again,
    under its own id, with every result known so far: the stores replace a message they hold
    under the same id. A result whose call is nowhere is stored as an assistant message of its
    own. Transient signals are left out (never stored), as Mastra's ``saveMessages`` does."""
    earlier = list(earlier)
    batch = list(messages)
    everything = earlier + batch
    first_new = len(earlier)
    stored: list[dict] = []
    new_flags: list[bool] = []
    by_call: dict[str, tuple[int, dict]] = {}  # tool call id -> (index in stored, its invocation)
    for index, message in enumerate(everything):
        is_new = index >= first_new
        role = message.get("role")
        if is_stored(message):
            stored.append(json_copy(message))
            new_flags.append(is_new)
        elif is_signal_message(message):
            signal = _model_signal(message)
            if signal.get("transient"):
                continue
            stored.append(signal_to_stored(signal))
            new_flags.append(is_new)
        elif role == "assistant":
            converted = _assistant_to_stored(message)
            for part in converted["content"]["parts"]:
                if part.get("type") == "tool-invocation":
                    by_call[part["toolInvocation"]["toolCallId"]] = (len(stored), part["toolInvocation"])
            stored.append(converted)
            new_flags.append(is_new)
        elif role == "tool":
            orphans = []
            for result in message.get("content") or []:
                if not isinstance(result, dict) or result.get("type") != "tool-result":
                    continue
                found = by_call.get(result.get("toolCallId"))
                if found is None:
                    orphans.append(result)
                    continue
                at, invocation = found
                _result_into(invocation, result)
                if is_new:
                    new_flags[at] = True
            if orphans:
                parts = []
                for result in orphans:
                    invocation = {"state": "call", "toolCallId": result.get("toolCallId"),
                                  "toolName": result.get("toolName"), "args": json_copy(result.get("args"))}
                    _result_into(invocation, result)
                    parts.append({"type": "tool-invocation", "toolInvocation": invocation})
                out = _base(message, "assistant")
                out["content"] = {"format": FORMAT, "parts": parts}
                stored.append(out)
                new_flags.append(is_new)
        elif role in ("user", "system"):
            stored.append(_plain_to_stored(message))
            new_flags.append(is_new)
        else:
            stored.append(json_copy(message))
            new_flags.append(is_new)
    return [m for m, new in zip(stored, new_flags) if new]


# -- stored → model messages ---------------------------------------------------------------------

def _envelope(message: dict, out: dict) -> dict:
    for key in ("threadId", "resourceId"):
        if message.get(key) is not None:
            out[key] = message[key]
    return out


def to_model_messages(stored: Iterable[dict]) -> list[dict]:
    """Stored messages (in order) as the runtime's model messages: what a run remembers and the
    model is shown. A signal is rendered (:func:`.signal.render_signal`); an assistant message
    gives the assistant message (its text, reasoning and tool calls) and, when its calls have
    results, the tool message after it. Messages not in the stored format are kept as they are."""
    out: list[dict] = []
    calls_seen: set = set()
    for message in stored:
        if not is_stored(message):
            out.append(message)
            continue
        content = message["content"]
        role = message.get("role")
        if role == "signal":
            out.append(_envelope(message, render_signal(stored_to_signal(message))))
            continue
        if role == "assistant":
            if is_error_entry(message):  # for the people reading the thread, not for the model
                continue
            parts = content.get("parts") or []
            invocations = [p.get("toolInvocation") or {} for p in parts if p.get("type") == "tool-invocation"]
            results_only = bool(invocations) and len(invocations) == len(parts) and all(
                i.get("state") == "result" and i.get("toolCallId") in calls_seen for i in invocations)
            if not results_only:
                model_parts = [p for p in (_part_to_model(p) for p in parts) if p is not None]
                assistant = {"id": message["id"], "role": "assistant", "content": model_parts,
                             "createdAt": message.get("createdAt")}
                if message.get("type"):
                    assistant["type"] = message["type"]
                # the agent, run and model that wrote an answer are for its readers, not for the model
                meta = {k: v for k, v in (content.get("metadata") or {}).items() if k not in ANSWER_STAMP}
                if meta:
                    assistant["metadata"] = json_copy(meta)
                if content.get("providerMetadata"):
                    assistant["providerOptions"] = json_copy(content["providerMetadata"])
                out.append(_envelope(message, assistant))
            results = []
            for inv in invocations:
                calls_seen.add(inv.get("toolCallId"))
                if inv.get("state") != "result":
                    continue
                result = {"type": "tool-result", "toolCallId": inv.get("toolCallId"), "toolName": inv.get("toolName"),
                          "result": json_copy(inv.get("result"))}
                if "isError" in inv:
                    result["isError"] = inv["isError"]
                results.append(result)
            if results:
                tool_id = message["id"] if results_only else f"{message['id']}-results"
                out.append(_envelope(message, {"id": tool_id, "role": "tool", "content": results,
                                               "createdAt": message.get("createdAt")}))
            continue
        parts = content.get("parts") or []
        text_only = all(p.get("type") == "text" and not p.get("providerMetadata") for p in parts)
        if isinstance(content.get("content"), str) and text_only and _text_of_parts(parts) == content["content"]:
            model_content: Any = content["content"]
        else:
            model_content = [p for p in (_part_to_model(p) for p in parts) if p is not None]
        plain = {"id": message["id"], "role": role or "user", "content": model_content,
                 "createdAt": message.get("createdAt")}
        if message.get("type"):
            plain["type"] = message["type"]
        if content.get("metadata"):
            plain["metadata"] = json_copy(content["metadata"])
        if content.get("providerMetadata"):
            plain["providerOptions"] = json_copy(content["providerMetadata"])
        out.append(_envelope(message, plain))
    return out


def answers_stamped(messages: list[dict], *, agent_id: str | None = None, run_id: str | None = None,
                    models: dict[str, str] | None = None) -> list[dict]:
    """``messages`` (stored) with each assistant message naming, in ``content.metadata``, the agent
    and the run that wrote it (``agentId``, ``runId``: a thread answered by several agents shows
    each answer under its own agent) and, when its id is in ``models`` (message id →
    ``provider/model_id``: the model that answered its step), that model as Mastra's answers name it
    (``modelId``, ``provider``: a fallback chain's answers each name their own)."""
    out = []
    for message in messages:
        if message.get("role") == "assistant" and is_stored(message):
            meta = dict(message["content"].get("metadata") or {})
            if run_id:
                meta["runId"] = run_id
            if agent_id:
                meta["agentId"] = agent_id
            model = (models or {}).get(message.get("id"))
            if model:
                provider, meta["modelId"] = label_parts(model)
                meta["provider"] = provider  # after modelId, in Mastra's order
            if meta:
                message = {**message, "content": {**message["content"], "metadata": meta}}
        out.append(message)
    return out


def step_models(steps: Iterable[Any]) -> dict[str, str]:
    """The model that answered each step (``provider/model_id``), by the id of its assistant message:
    :func:`answers_stamped`'s ``models``."""
    return {step.message_id: step.model for step in steps if step.message_id and step.model}


def error_entry(*, message_id: str, created_at: str, agent_id: str | None, run_id: str, code: str,
                reason: str) -> dict:
    """What a failed run leaves in its thread: an assistant message without parts whose
    ``content.metadata.error`` says why (``code``, ``message``), so that a reader of the thread sees
    the failure after a reload. It is never shown to the model (:func:`to_model_messages`)."""
    meta: dict = {"runId": run_id, "error": {"code": code, "message": reason}}
    if agent_id:
        meta["agentId"] = agent_id
    return {"id": message_id, "role": "assistant", "createdAt": created_at,
            "content": {"format": FORMAT, "parts": [], "metadata": meta}}


def notice_entry(*, message_id: str, created_at: str, agent_id: str | None, run_id: str, notice: dict) -> dict:
    """A notice a run leaves in its thread (a soft budget spent: ``notice`` is
    ``BudgetNotice.to_dict()``): like an :func:`error_entry`, an assistant message without parts,
    with ``content.metadata.notice``; never shown to the model."""
    meta: dict = {"runId": run_id, "notice": notice}
    if agent_id:
        meta["agentId"] = agent_id
    return {"id": message_id, "role": "assistant", "createdAt": created_at,
            "content": {"format": FORMAT, "parts": [], "metadata": meta}}


def is_error_entry(message: dict) -> bool:
    """Whether a stored message is a failed run's :func:`error_entry` (or a :func:`notice_entry`):
    for the thread's readers, never for the model."""
    content = message.get("content")
    meta = (content.get("metadata") or {}) if isinstance(content, dict) else {}
    return (message.get("role") == "assistant" and isinstance(content, dict) and not content.get("parts")
            and (isinstance(meta.get("error"), dict) or isinstance(meta.get("notice"), dict)))


def is_transient_stored(message: dict) -> bool:
    """Whether a stored message holds a ``transient`` signal (never stored)."""
    meta = (message["content"].get("metadata") or {}).get("signal") if is_stored(message) else None
    return isinstance(meta, dict) and meta.get("transient") is True


def stored_form(messages: Iterable[dict], *, earlier: Iterable[dict] = ()) -> list[dict]:
    """``messages`` as a memory store keeps them: in the stored format (model messages converted by
    :func:`to_stored_messages`), without transient signals."""
    messages = [m for m in messages if not is_transient_message(m)]
    return [m for m in to_stored_messages(messages, earlier=earlier) if not is_transient_stored(m)]


def stored_text(message: dict) -> str:
    """The text of a stored message: its text parts joined (a signal's: its contents' text)."""
    if not is_stored(message):
        content = message.get("content")
        return content if isinstance(content, str) else ""
    return "\n".join(p.get("text", "") for p in message["content"]["parts"] if p.get("type") == "text")
