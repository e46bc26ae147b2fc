"""A processor that redacts personal data (email addresses, phone numbers) from what the model
receives and from what it answers."""

from __future__ import annotations

import re

from .message_text import message_text_map

EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
#: international (+33 6 12 34 56 78) and national (555-123-4567, (555) 123 4567, 06.12.34.56.78)
#: numbers: 7 to 15 digits with spaces, dots, dashes or parentheses between groups
PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{1,4}(?:[\s.-]?\d{2,4}){2,5}(?!\w)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: what a text may end with while an email or a phone number is still being streamed
_OPEN_TAIL = re.compile(r"[+(]?[\d\s().-]*\S*$")


class PIIRedactor:
    """Replaces emails by ``email_mask`` and phone numbers by ``phone_mask``.

    As an input processor it rewrites the user messages before the model sees them (the stored
    input keeps the original unless the processor runs there too). As an output processor it
    rewrites the streamed text — holding back the tail of the text that may still grow into an
    email or a number, so that no part of one is ever emitted — and the result text and the saved
    assistant message.
    """

    def __init__(self, *, id: str = "pii-redactor", emails: bool = True, phone_numbers: bool = True,
                 email_mask: str = "[EMAIL]", phone_mask: str = "[PHONE]"):
        self.id = id
        self.emails = emails
        self.phone_numbers = phone_numbers
        self.email_mask = email_mask
        self.phone_mask = phone_mask

    def redact(self, text: str) -> str:
        if self.emails:
            text = EMAIL.sub(self.email_mask, text)
        if self.phone_numbers:
            text = PHONE.sub(self._phone, text)
        return text

    def _phone(self, match: re.Match) -> str:
        found = match.group(0)
        if sum(c.isdigit() for c in found) < 7 or _DATE.fullmatch(found):
            return found
        return self.phone_mask

    def process_input(self, *, messages):
        return [message_text_map(m, self.redact) if m.get("role") == "user" else m for m in messages]

    def process_output_stream(self, *, chunk, state):
        kind = chunk.get("type")
        if kind == "text-delta":
            held = state.get("held", "") + chunk["payload"]["text"]
            tail = _OPEN_TAIL.search(held)
            cut = tail.start() if tail else len(held)
            state["held"] = held[cut:]
            if cut == 0:
                return None
            return {**chunk, "payload": {**chunk["payload"], "text": self.redact(held[:cut])}}
        if kind == "text-end" and state.get("held"):
            held, state["held"] = state["held"], ""
            delta = {**chunk, "type": "text-delta", "payload": {"id": chunk["payload"].get("id"),
                                                                "text": self.redact(held)}}
            return [delta, chunk]
        return chunk

    def process_output_result(self, *, messages, text):
        for index, message in enumerate(messages):
            if message.get("role") == "assistant":
                messages[index] = message_text_map(message, self.redact)
        return self.redact(text)


__all__ = ["EMAIL", "PHONE", "PIIRedactor"]
