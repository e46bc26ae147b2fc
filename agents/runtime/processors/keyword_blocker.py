"""A moderation-style processor: blocks a run whose input (or output) holds a blocked keyword."""

from __future__ import annotations

import re
from typing import Iterable

from ..errors import AgentConfigError
from .message_text import message_texts


class KeywordBlocker:
    """Trips the run when a user message, or the model's text, contains one of ``keywords``
    (whole words, case-insensitive).

    ``check``: ``"input"``, ``"output"`` or ``"both"`` (default). On input the run ends before any
    model call with the tripwire ``reason`` and ``metadata={"keyword": <the keyword as configured>,
    "where": "input"}``. On output, with ``retry_output=True`` the model is asked to answer again
    (``reason`` is its feedback, within ``max_processor_retries``); otherwise the run ends with the
    tripwire. Use it as an input and as an output processor of the same agent for ``"both"``.
    """

    def __init__(self, keywords: Iterable[str], *, id: str = "keyword-blocker", check: str = "both",
                 reason: str = "The message contains a blocked keyword.", retry_output: bool = False):
        keywords = list(keywords)
        if not keywords or not all(isinstance(k, str) and k.strip() for k in keywords):
            raise AgentConfigError("KeywordBlocker.keywords", "must be a non-empty list of non-empty strings")
        if check not in ("input", "output", "both"):
            raise AgentConfigError("KeywordBlocker.check", "must be 'input', 'output' or 'both'")
        self.id = id
        self.keywords = keywords
        self.check = check
        self.reason = reason
        self.retry_output = retry_output
        self._pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(k.strip()) for k in keywords) + r")(?!\w)",
                                   re.IGNORECASE)

    def find(self, text: str) -> str | None:
        """The configured keyword found in ``text``, or None."""
        match = self._pattern.search(text)
        if match is None:
            return None
        found = match.group(1).lower()
        return next(k for k in self.keywords if k.strip().lower() == found)

    def process_input(self, *, messages, abort):
        if self.check == "output":
            return None
        for message in messages:
            if message.get("role") != "user":
                continue
            for text in message_texts(message):
                keyword = self.find(text)
                if keyword is not None:
                    abort(self.reason, metadata={"keyword": keyword, "where": "input"})
        return None

    def process_output_stream(self, *, chunk, abort, state):
        if self.check == "input" or chunk.get("type") not in ("text-delta", "text-end"):
            return chunk
        if chunk["type"] == "text-delta":
            # the text so far (a keyword may be split across deltas) without its last word, which
            # may still grow ("kill" must not match the start of "killer")
            state["text"] = state.get("text", "") + chunk["payload"]["text"]
            text = re.sub(r"\w+$", "", state["text"])
        else:
            text = state.pop("text", "")
        keyword = self.find(text)
        if keyword is not None:
            state.pop("text", None)
            abort(self.reason, retry=self.retry_output, metadata={"keyword": keyword, "where": "output"})
        return chunk


__all__ = ["KeywordBlocker"]
