"""A processor that trims the conversation history to a token budget before each model step."""

from __future__ import annotations

import json
import math
from typing import Callable

from ..errors import AgentConfigError
from .message_text import message_texts


def estimate_tokens(message: dict) -> int:
    """A provider-free estimate: one token per 4 characters of text (tool calls and results
    counted on their JSON), plus 4 per message for its role and framing."""
    content = message.get("content")
    if isinstance(content, list):
        size = sum(len(p.get("text", "")) if p.get("type") in ("text", "reasoning")
                   else len(json.dumps(p, default=str)) for p in content if isinstance(p, dict))
    else:
        size = sum(len(t) for t in message_texts(message))
    return 4 + math.ceil(size / 4)


class TokenLimiter:
    """Keeps the newest messages whose tokens fit in ``max_tokens``; older ones are left out of
    the model's request (memory keeps them).

    The turn being answered (the last user message and what follows it) is always kept, even over
    the budget; older messages are added newest first while they fit. A tool result is never sent
    without the assistant message that called the tool (an orphan result is left out with it).
    ``count_tokens(message) -> int`` replaces the estimate (e.g. a tokenizer of your model).
    Runs before the first step (``process_input``) and before each step (``process_input_step``).
    """

    def __init__(self, max_tokens: int, *, id: str = "token-limiter",
                 count_tokens: Callable[[dict], int] | None = None):
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise AgentConfigError("TokenLimiter.max_tokens", "must be a positive integer")
        self.id = id
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens or estimate_tokens

    def trim(self, messages: list[dict]) -> list[dict]:
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
        current = messages[last_user:]  # the turn being answered: always sent
        used = sum(self.count_tokens(m) for m in current)
        start = last_user
        while start > 0 and used + self.count_tokens(messages[start - 1]) <= self.max_tokens:
            start -= 1
            used += self.count_tokens(messages[start])
        while start < last_user and messages[start].get("role") == "tool":  # its call was trimmed away
            start += 1
        return messages[start:]

    def process_input(self, *, messages):
        return self.trim(messages)

    def process_input_step(self, *, messages):
        return self.trim(messages)


__all__ = ["TokenLimiter", "estimate_tokens"]
