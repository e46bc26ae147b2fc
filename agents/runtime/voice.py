"""Voice: speech out of text (``speak``) and text out of speech (``listen``), Mastra's ``voice``.

``Agent(voice=CompositeVoice(input=..., output=...))`` gives an agent a voice; ``agent.voice`` is it
(or :class:`NoVoice`, whose every call raises ``voice_not_configured``). A voice provider is a
:class:`MastraVoice` with four coroutines, as Mastra's ``MastraVoice``:

- ``await speak(text, speaker=None, **options)`` → an :class:`AudioStream`: an async iterable of
  ``bytes`` with its ``format`` (``"mp3"``, ``"wav"``...) and ``content_type``; ``text`` may also be
  an async iterable of strings (joined first). The provider's HTTP errors surface here, before the
  first byte;
- ``await listen(audio, **options)`` → the transcript (``str``); ``audio`` is ``bytes``, a file
  object or an (async) iterable of ``bytes``;
- ``await get_speakers()`` → ``[{"voice_id": ..., ...}]``;
- ``await get_listener()`` → ``{"enabled": bool}``;

and says what it can do without a call: ``speaks`` / ``listens`` (a provider does what it implements).

:class:`CompositeVoice` puts a listening provider (``input``) and a speaking one (``output``)
together. :class:`LocalVoice` is offline and deterministic (tests, the demo without a key): it
speaks a short WAV tone and "hears" ``transcript`` (default ``"transcript of <N> bytes"``, as the
reference server's mock voice). ``OpenAIVoice`` (``agents.runtime.providers.openai_voice``) uses
OpenAI's speech and transcription endpoints through the ``openai`` SDK.

Realtime (speech-to-speech) voices are not part of this runtime.
"""

from __future__ import annotations

import inspect
import io
import math
import struct
from typing import Any, AsyncIterable, AsyncIterator

from .errors import MastraError

#: audio formats and their MIME types
CONTENT_TYPES = {"mp3": "audio/mpeg", "wav": "audio/wav", "opus": "audio/ogg", "ogg": "audio/ogg",
                 "aac": "audio/aac", "flac": "audio/flac", "pcm": "audio/pcm", "webm": "audio/webm",
                 "m4a": "audio/mp4", "mp4": "audio/mp4"}


class VoiceError(MastraError):
    """A voice call failed: ``voice_not_configured`` (no voice, or no speaking / listening
    provider), ``invalid_audio`` (no audio, or not audio), ``voice_provider_error`` (the
    provider's HTTP or connection failure: ``status`` when it answered)."""

    code = "voice_error"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        from .redaction import redact_text

        super().__init__(redact_text(message), code=code)
        self.status = status


class AudioStream:
    """Audio as it comes: ``async for chunk in stream`` (bytes), once; ``await stream.read()`` for
    all of it; ``await stream.aclose()`` to let go of an unread one."""

    def __init__(self, chunks: AsyncIterator[bytes], *, format: str, content_type: str | None = None):
        self._chunks = chunks
        self.format = format
        self.content_type = content_type or CONTENT_TYPES.get(format, "application/octet-stream")

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self._chunks])

    async def aclose(self) -> None:
        close = getattr(self._chunks, "aclose", None)
        if close is not None:
            await close()

    @classmethod
    def of_bytes(cls, data: bytes, *, format: str, chunk_size: int = 8192) -> "AudioStream":
        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(data), chunk_size):
                yield data[start:start + chunk_size]

        return cls(chunks(), format=format)


async def text_of(input: Any) -> str:
    """``speak``'s input as one string (a string, or an (async) iterable of strings)."""
    if isinstance(input, str):
        return input
    parts = []
    if hasattr(input, "__aiter__"):
        async for part in input:
            parts.append(str(part))
    else:
        parts = [str(part) for part in input]
    return "".join(parts)


async def audio_bytes(audio: Any) -> bytes:
    """``listen``'s audio as bytes: bytes-like, a file object (``read()``, sync or async) or an
    (async) iterable of bytes; ``invalid_audio`` for anything else or for no bytes."""
    if isinstance(audio, (bytes, bytearray, memoryview)):
        data = bytes(audio)
    elif hasattr(audio, "read"):
        data = audio.read()
        if inspect.isawaitable(data):
            data = await data
    elif hasattr(audio, "__aiter__"):
        data = b"".join([bytes(chunk) async for chunk in audio])
    elif hasattr(audio, "__iter__") and not isinstance(audio, str):
        data = b"".join(bytes(chunk) for chunk in audio)
    else:
        raise VoiceError(f"audio must be bytes, a file or an iterable of bytes, not {type(audio).__name__}",
                         code="invalid_audio")
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise VoiceError("no audio: the recording is empty", code="invalid_audio")
    return bytes(data)


class MastraVoice:
    """Base of voice providers: ``speaker`` is the default speaker; each method raises
    ``voice_not_configured`` until a subclass implements it."""

    name = "voice"

    def __init__(self, *, speaker: str | None = None, name: str | None = None):
        self.speaker = speaker
        if name is not None:
            self.name = name

    async def speak(self, input: str | AsyncIterable[str], *, speaker: str | None = None,
                    **options: Any) -> AudioStream:
        raise VoiceError(f"{self.name} cannot speak", code="voice_not_configured")

    async def listen(self, audio: Any, **options: Any) -> str:
        raise VoiceError(f"{self.name} cannot listen", code="voice_not_configured")

    async def get_speakers(self) -> list[dict]:
        return []

    async def get_listener(self) -> dict:
        return {"enabled": False}

    @property
    def speaks(self) -> bool:
        """Whether ``speak`` can work: a provider speaks when it implements ``speak``."""
        return type(self).speak is not MastraVoice.speak

    @property
    def listens(self) -> bool:
        """Whether ``listen`` can work: a provider listens when it implements ``listen``."""
        return type(self).listen is not MastraVoice.listen


class CompositeVoice(MastraVoice):
    """A listening provider (``input``) and a speaking one (``output``), either optional."""

    name = "composite"

    def __init__(self, *, input: MastraVoice | None = None, output: MastraVoice | None = None):
        for field, value in (("input", input), ("output", output)):
            if value is not None and not isinstance(value, MastraVoice):
                from .errors import AgentConfigError

                raise AgentConfigError(f"voice.{field}", "must be a voice provider (a MastraVoice, e.g. OpenAIVoice)")
        super().__init__(speaker=getattr(output, "speaker", None))
        self.input = input
        self.output = output

    async def speak(self, input: Any, *, speaker: str | None = None, **options: Any) -> AudioStream:
        if self.output is None:
            raise VoiceError("No speak provider configured: give CompositeVoice an output", code="voice_not_configured")
        return await self.output.speak(input, speaker=speaker, **options)

    async def listen(self, audio: Any, **options: Any) -> str:
        if self.input is None:
            raise VoiceError("No listen provider configured: give CompositeVoice an input", code="voice_not_configured")
        return await self.input.listen(audio, **options)

    async def get_speakers(self) -> list[dict]:
        return await self.output.get_speakers() if self.output is not None else []

    async def get_listener(self) -> dict:
        return await self.input.get_listener() if self.input is not None else {"enabled": False}

    @property
    def speaks(self) -> bool:
        return self.output is not None and self.output.speaks

    @property
    def listens(self) -> bool:
        return self.input is not None and self.input.listens


class NoVoice(MastraVoice):
    """``agent.voice`` of an agent without one: every call raises ``voice_not_configured``."""

    def __init__(self, agent_id: str):
        super().__init__(name=f"agent {agent_id!r}")
        self.message = f"No voice provider configured: agent {agent_id!r} has no voice (Agent(voice=CompositeVoice(...)))"

    async def speak(self, input: Any, *, speaker: str | None = None, **options: Any) -> AudioStream:
        raise VoiceError(self.message, code="voice_not_configured")

    async def listen(self, audio: Any, **options: Any) -> str:
        raise VoiceError(self.message, code="voice_not_configured")

    async def get_speakers(self) -> list[dict]:
        raise VoiceError(self.message, code="voice_not_configured")

    async def get_listener(self) -> dict:
        raise VoiceError(self.message, code="voice_not_configured")

    speaks = False
    listens = False


class LocalVoice(MastraVoice):
    """Offline and deterministic: speaks a WAV tone (16-bit mono, 8 kHz, 80 ms per word, at most 5 s;
    a higher pitch per speaker), hears ``transcript`` or ``"transcript of <N> bytes"``."""

    name = "local"
    SPEAKERS = ("low", "high")

    def __init__(self, *, speaker: str = "low", transcript: str | None = None):
        super().__init__(speaker=speaker)
        self.transcript = transcript

    async def speak(self, input: Any, *, speaker: str | None = None, **options: Any) -> AudioStream:
        text = await text_of(input)
        if not text.strip():
            raise VoiceError("nothing to say: the text is empty", code="invalid_text")
        who = speaker or self.speaker or "low"
        if who not in self.SPEAKERS:
            raise VoiceError(f"unknown speaker {who!r} (local speakers: {', '.join(self.SPEAKERS)})",
                             code="invalid_speaker")
        return AudioStream.of_bytes(wav_tone(text, high=who == "high"), format="wav")

    async def listen(self, audio: Any, **options: Any) -> str:
        data = await audio_bytes(audio)
        return self.transcript if self.transcript is not None else f"transcript of {len(data)} bytes"

    async def get_speakers(self) -> list[dict]:
        return [{"voice_id": name, "name": name.capitalize()} for name in self.SPEAKERS]

    async def get_listener(self) -> dict:
        return {"enabled": True}


def wav_tone(text: str, *, high: bool = False, rate: int = 8000) -> bytes:
    """A WAV file: a soft tone as long as ``text`` would take to say (80 ms a word, 0.08-5 s)."""
    words = max(1, len(text.split()))
    frames = int(rate * min(5.0, 0.08 * words))
    pitch = 660.0 if high else 440.0
    samples = b"".join(struct.pack("<h", int(3000 * math.sin(2 * math.pi * pitch * i / rate))) for i in range(frames))
    out = io.BytesIO()
    out.write(b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVE")
    out.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16))
    out.write(b"data" + struct.pack("<I", len(samples)) + samples)
    return out.getvalue()


def voice_check(voice: Any, field: str = "voice") -> Any:
    """``voice`` when it is a voice provider (or None); raises ``AgentConfigError`` otherwise."""
    if voice is None or isinstance(voice, MastraVoice):
        return voice
    from .errors import AgentConfigError

    raise AgentConfigError(field, "must be a voice (CompositeVoice(input=..., output=...), OpenAIVoice(...), "
                                  "LocalVoice() or another MastraVoice)")


__all__ = ["AudioStream", "CONTENT_TYPES", "CompositeVoice", "LocalVoice", "MastraVoice", "NoVoice", "VoiceError",
           "audio_bytes", "text_of", "voice_check", "wav_tone"]
