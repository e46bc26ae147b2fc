"""Thread title generation after a run (``Memory(generate_title=...)``), in the background."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..providers.base import ModelRequest
from ..providers.router import resolve_model
from ..run import maybe_await

logger = logging.getLogger(__name__)

TITLE_INSTRUCTIONS = ("Write a short title (at most 8 words) for a conversation that starts with the "
                      "user message below. Answer with the title only.")
#: title tasks in flight (kept referenced until they end)
_pending: set[asyncio.Task] = set()


def title_generate_soon(run: Any, first_message: str) -> None:
    """Start :func:`title_generate` for ``run``'s thread as a background task."""
    task = asyncio.ensure_future(title_generate(run, first_message))
    _pending.add(task)
    task.add_done_callback(_pending.discard)


async def title_generate(run: Any, first_message: str) -> None:
    """Ask the run's model (or the setting's ``model``, with its ``instructions``) for a title of
    the conversation that starts with ``first_message``, store it and call ``on_title_generated``.
    Never raises: a failure is logged."""
    mem = run.memory
    setting = mem["generate_title"]
    model = run.model
    instructions = TITLE_INSTRUCTIONS
    if isinstance(setting, dict):
        if setting.get("model") is not None:
            model = resolve_model(setting["model"])
        instructions = setting.get("instructions") or instructions
    try:
        parts = []
        async for event in model.stream(ModelRequest(messages=[{"role": "system", "content": instructions},
                                                               {"role": "user", "content": first_message}])):
            if event["type"] == "text-delta":
                parts.append(event["text"])
        title = " ".join("".join(parts).split())[:100] or first_message[:100]
        await mem["store"].set_thread_title(resource_id=mem["resource_id"], thread_id=mem["thread_id"], title=title)
        callback = mem.get("on_title_generated")
        if callback is not None:
            await maybe_await(callback(title))
    except Exception:
        logger.exception("title generation failed for thread %s", mem["thread_id"])


__all__ = ["TITLE_INSTRUCTIONS", "title_generate", "title_generate_soon"]
