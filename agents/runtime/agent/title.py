"""Thread title generation after a run (``Memory(generate_title=...)``), in the background."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any

from ..providers.base import ModelRequest
from ..providers.chain import model_label
from ..providers.router import resolve_model
from ..results import Usage
from ..run import maybe_await
from ..run.spending import side_call_record, side_call_refusal
from ..tracing.steps import call_observed

logger = logging.getLogger(__name__)

TITLE_INSTRUCTIONS = ("Write a short title (at most 8 words) for a conversation that starts with the "
                      "user message below. Answer with the title only.")
#: characters of a title made from the first message (an ellipsis marks a cut)
TITLE_CHARS = 60
#: characters of a title a model wrote
MODEL_TITLE_CHARS = 100
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s+[^<>]*?)?/?>")
_FENCE = re.compile(r"^\s*(```|~~~)[\w+-]*\s*$", re.M)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINE_MARK = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d{1,9}[.)]\s+)", re.M)
_EMPHASIS = re.compile(r"(?<!\w)(\*\*|__|\*|_|~~|`+)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_TOOL_LINE = re.compile(r"^\s*/tool\s+([A-Za-z0-9_.:-]+).*$", re.M)
#: title tasks in flight (kept referenced until they end)
_pending: set[asyncio.Task] = set()


def title_clean(text: str, limit: int = MODEL_TITLE_CHARS) -> str:
    """``text`` as a thread title: tags (a signal's XML) and markdown marks dropped (their text
    kept), whitespace collapsed to single spaces, surrounding quotes and stray marks removed, cut at ``limit``
    characters on a word boundary with an ellipsis."""
    text = _FENCE.sub(" ", text)
    text = _TAG.sub(" ", text)
    text = _LINK.sub(r"\1", text)
    text = _LINE_MARK.sub("", text)
    for _ in range(3):  # nested emphasis: ***bold italic***
        text = _EMPHASIS.sub(r"\2", text)
    text = " ".join(text.split()).strip("\"'“”‘’ *_`~#")
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def title_from_message(first_message: str) -> str:
    """A title made from the thread's first user message without asking a model: its first line
    that says something, cleaned (:func:`title_clean`) and cut at :data:`TITLE_CHARS`; a
    ``/tool <name> …`` line (the offline model's syntax) becomes ``Tool <name>``."""
    text = _TOOL_LINE.sub(lambda m: f"Tool {m.group(1)}", first_message)
    for line in _FENCE.sub("\n", text).splitlines():
        title = title_clean(line, TITLE_CHARS)
        if title:
            return title
    return title_clean(text, TITLE_CHARS)


def title_generate_soon(run: Any, first_message: str) -> None:
    """Start :func:`title_generate` for ``run``'s thread as a background task."""
    task = asyncio.ensure_future(title_generate(run, first_message))
    _pending.add(task)
    task.add_done_callback(_pending.discard)


async def title_generate(run: Any, first_message: str) -> None:
    """Ask the run's model (or the setting's ``model``, with its ``instructions``) for a title of
    the conversation that starts with ``first_message``, store it (cleaned: :func:`title_clean`)
    and call ``on_title_generated``. A model that cannot write one (``writes_titles = False``: the
    offline ``local/echo``) is not asked: the title is :func:`title_from_message`. Never raises: a
    failure is logged.

    The call is one of the run's model calls for the site's accounts: its step observers (the cost
    ledger) get it as ``kind: "title"``, and its run policy counts its usage against the run's
    budgets. When a hard budget of the run's scope is spent, no model is asked: the title is made
    from the message."""
    mem = run.memory
    setting = mem["generate_title"]
    model = run.model
    instructions = TITLE_INSTRUCTIONS
    if isinstance(setting, dict):
        if setting.get("model") is not None:
            model = resolve_model(setting["model"])
        instructions = setting.get("instructions") or instructions
    try:
        asks = getattr(model, "writes_titles", True)
        refused = await side_call_refusal(run) if asks else None
        if refused is not None:
            logger.info("the title of thread %s is made from its first message: %s", mem["thread_id"], refused)
        if asks and refused is None:
            title = title_clean(await _title_asked(run, model, instructions, first_message)) or title_from_message(
                first_message)
        else:  # the offline model would echo the request, or a budget is spent: made from the message itself
            title = title_from_message(first_message)
        if not title:
            return
        await mem["store"].set_thread_title(resource_id=mem["resource_id"], thread_id=mem["thread_id"], title=title)
        callback = mem.get("on_title_generated")
        if callback is not None:
            await maybe_await(callback(title))
    except Exception:
        logger.exception("title generation failed for thread %s", mem["thread_id"])


async def _title_asked(run: Any, model: Any, instructions: str, first_message: str) -> str:
    """The text ``model`` answers to the title request; the call is observed and counted (see
    :func:`title_generate`)."""
    parts, finish = [], {}
    started = time.monotonic()
    async for event in model.stream(ModelRequest(messages=[{"role": "system", "content": instructions},
                                                           {"role": "user", "content": first_message}])):
        if event["type"] == "text-delta":
            parts.append(event["text"])
        elif event["type"] == "finish":
            finish = event
    label, usage = model_label(model), finish.get("usage")
    call_observed(run, kind="title", model=label, step_number=len(run.steps),
                  usage=Usage(usage).camel() if usage is not None else None, latency_s=time.monotonic() - started)
    if usage is not None:
        await side_call_record(run, label, usage)
    return "".join(parts)


async def title_drain(timeout: float = 10.0) -> bool:
    """Wait until no title is being generated; False when some still ran after ``timeout`` seconds."""
    if not _pending:
        return True
    done, pending = await asyncio.wait(set(_pending), timeout=timeout)
    return not pending


__all__ = ["TITLE_INSTRUCTIONS", "title_clean", "title_drain", "title_from_message", "title_generate",
           "title_generate_soon"]
