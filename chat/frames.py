"""The frames of the chat websocket (DESIGN §5): the client's, checked before anything acts on
them, and the server's chunks, encoded once for every socket that gets them.

:func:`frame_parse` turns the text of one websocket message into a :class:`Frame` or raises
:class:`FrameError` (the consumer answers with an error frame and keeps the socket open).
:func:`chunk_text` is the text of a chunk frame; :func:`chunk_fitted` makes a chunk too large for
one websocket message fit (its long strings cut).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from agents.json_text import dumps
from agents.runtime.errors import MastraError
from agents.runtime.json_input import InputError, json_decode

FRAME_TYPES = ("send-message", "queue-message", "abort", "tool-approval", "cancel-queued", "ping")


class FrameError(MastraError):
    """A client frame the consumer cannot act on."""

    code = "invalid_frame"


@dataclass(frozen=True)
class Frame:
    type: str
    message: str | None = None
    attributes: dict = field(default_factory=dict)
    run_id: str | None = None
    tool_call_id: str | None = None
    approved: bool | None = None
    signal_id: str | None = None
    #: the model a run this message wakes should use, as the client sent it (``agents.model_choice``
    #: decides whether it may); None: the agent's own
    model: Any = None


def frame_parse(text: str | None, *, max_bytes: int) -> Frame:
    """One client frame from its text; raises :class:`FrameError` (``frame_too_large``,
    ``invalid_json``, ``invalid_text``, ``invalid_frame``) for anything else. The text is decoded
    as HTTP bodies are (``agents.runtime.json_input``): strict JSON nested at most 64 levels, no
    lone surrogate or NUL in any string or key."""
    if text is None:
        raise FrameError("frames are JSON text, not binary")
    if len(text) > max_bytes or len(text.encode("utf-8")) > max_bytes:
        raise FrameError(f"the frame is larger than {max_bytes} bytes", code="frame_too_large")
    try:
        data = json_decode(text, what="the frame")
    except InputError as exc:
        raise FrameError(exc.message, code=exc.code) from None
    if not isinstance(data, dict):
        raise FrameError("a frame is a JSON object with a type")
    kind = data.get("type")
    if kind not in FRAME_TYPES:
        raise FrameError(f"unknown frame type {kind!r}; one of {', '.join(FRAME_TYPES)}")
    if kind in ("send-message", "queue-message"):
        message = data.get("message")
        if not isinstance(message, str) or not message.strip():
            raise FrameError(f"{kind} needs a non-empty string message")
        attributes = data.get("attributes")
        if attributes is None:
            attributes = {}
        if not isinstance(attributes, dict):
            raise FrameError("attributes must be an object")
        return Frame(kind, message=message, attributes=attributes, model=data.get("model"))
    if kind == "tool-approval":
        run_id, call_id, approved = data.get("runId"), data.get("toolCallId"), data.get("approved")
        if not _id(run_id) or not _id(call_id) or not isinstance(approved, bool):
            raise FrameError("tool-approval needs runId and toolCallId (strings) and approved (true or false)")
        return Frame(kind, run_id=run_id, tool_call_id=call_id, approved=approved)
    if kind == "cancel-queued":
        signal_id = data.get("signalId")
        if not _id(signal_id):
            raise FrameError("cancel-queued needs a signalId (string)")
        return Frame(kind, signal_id=signal_id)
    return Frame(kind)


def _id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 255


def error_frame(code: str, message: str, frame_type: str | None = None) -> dict:
    """An error frame; ``frame`` names the type of the client frame it refuses, when there was one
    (the page gives a refused message's text back to its composer)."""
    out = {"type": "error", "code": code, "message": message}
    if frame_type:
        out["frame"] = frame_type
    return out


#: the chunks encoded lately (by identity, with the chunk itself, so that its id is not reused
#: while it is here): a thread's chunk is one dict handed to every subscriber on the thread
CHUNK_TEXTS = 4096
_chunk_texts: "OrderedDict[int, tuple[dict, str]]" = OrderedDict()


def chunk_text(chunk: dict) -> str:
    """The frame of ``chunk`` (``json.dumps``), encoded once however many sockets on its thread
    get it (measured: 1,000 sockets on 100 threads, each thread's chunk went to five sockets of a
    process, and its encoding was 4 % of the process's time). A chunk is never changed once handed
    out; the event loop's thread alone calls this."""
    key = id(chunk)
    hit = _chunk_texts.get(key)
    if hit is not None and hit[0] is chunk:
        return hit[1]
    text = dumps(chunk)
    _chunk_texts[key] = (chunk, text)
    if len(_chunk_texts) > CHUNK_TEXTS:
        _chunk_texts.popitem(last=False)
    return text


def frame_limit() -> int:
    """The largest websocket message the server sends: daphne's own limit
    (``DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE``; the ``daphne`` command is given the same number)."""
    return settings.DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE


#: characters of a long string kept when a chunk is cut to fit one websocket message
CUT_STRING_CHARS = 16 * 1024
#: a string (or a list or object's JSON) longer than this is cut, or replaced, in a cut chunk
CUT_VALUE_CHARS = 64 * 1024


def value_cut(value: Any) -> Any:
    """``value`` with its long strings cut and its large lists and objects cut inside."""
    if isinstance(value, str):
        if len(value) <= CUT_VALUE_CHARS:
            return value
        return value[:CUT_STRING_CHARS] + f"… [{len(value) - CUT_STRING_CHARS} more characters not shown here]"
    if isinstance(value, dict):
        return {k: value_cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [value_cut(v) for v in value]
    return value


def chunk_fitted(chunk: dict, text: str, limit: int) -> str:
    """The frame of ``chunk`` (whose frame is ``text``) within ``limit`` characters, the largest
    websocket message the server sends: as it is when it fits; else with the long strings of its
    ``payload`` or ``data`` cut (a streamed answer's text, a tool's result), so that the page keeps
    the chunk's place in its run; else with them empty. Every cut chunk says ``"cut": <the
    characters of its whole frame>``. A chunk over the limit would otherwise make daphne close the
    socket, and the page, resuming after its last seq, would be sent the same chunk again."""
    if len(text) <= limit:
        return text
    fitted = {k: (value_cut(v) if k in ("payload", "data") else v) for k, v in chunk.items()}
    fitted["cut"] = len(text)
    out = json.dumps(fitted)
    if len(out) <= limit:
        return out
    emptied = {k: ({} if k in ("payload", "data") else v) for k, v in chunk.items()}
    emptied["cut"] = len(text)
    return json.dumps(emptied)
