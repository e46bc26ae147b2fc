"""A processor that normalises the Unicode of user messages before the model sees them."""

from __future__ import annotations

import re
import unicodedata

from ..errors import AgentConfigError
from .message_text import message_text_map

#: control and format characters (zero-width, bidi overrides), but not newline and tab
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n{3,}")


class UnicodeNormalizer:
    """Rewrites the text of user messages: Unicode normal form ``form`` (NFKC by default: full-width
    letters, ligatures and compatibility characters become their plain form), control and invisible
    format characters removed (``strip_control_chars``), runs of spaces and of blank lines collapsed
    (``collapse_whitespace``) and surrounding whitespace trimmed (``trim``)."""

    def __init__(self, *, id: str = "unicode-normalizer", form: str = "NFKC", strip_control_chars: bool = True,
                 collapse_whitespace: bool = True, trim: bool = True):
        if form not in ("NFC", "NFD", "NFKC", "NFKD"):
            raise AgentConfigError("UnicodeNormalizer.form", "must be 'NFC', 'NFD', 'NFKC' or 'NFKD'")
        self.id = id
        self.form = form
        self.strip_control_chars = strip_control_chars
        self.collapse_whitespace = collapse_whitespace
        self.trim = trim

    def normalize(self, text: str) -> str:
        text = unicodedata.normalize(self.form, text)
        if self.strip_control_chars:
            text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
        if self.collapse_whitespace:
            text = _BLANK_LINES.sub("\n\n", _SPACES.sub(" ", text))
        if self.trim:
            text = text.strip()
        return text

    def process_input(self, *, messages):
        return [message_text_map(m, self.normalize) if m.get("role") == "user" else m for m in messages]


__all__ = ["UnicodeNormalizer"]
