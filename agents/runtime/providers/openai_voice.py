"""``OpenAIVoice``: OpenAI's speech (``/v1/audio/speech``) and transcription
(``/v1/audio/transcriptions``) endpoints through the official ``openai`` SDK, as Mastra's
``@mastra/voice-openai``.

``OpenAIVoice(speech_model={"name": "tts-1", "api_key": ...}, listening_model={"name": "whisper-1"},
speaker="alloy", api_key=None, base_url=None)``; every option has a default. The key is the model's
``api_key``, else ``api_key``, else ``$OPENAI_API_KEY``; the base URL is ``base_url``, else
``$OPENAI_BASE_URL`` (an OpenAI-compatible server: then no key is needed), else OpenAI's.

- ``speak(text, speaker=None, speed=None, response_format="mp3", instructions=None)`` streams the
  audio as the server sends it;
- ``listen(audio, filetype="mp3", language=None, prompt=None, temperature=None)`` uploads the audio
  (multipart, named ``audio.<filetype>``) and returns the transcript.

Failures raise :class:`~agents.runtime.voice.VoiceError` (``voice_provider_error``, with the HTTP
status) or :class:`~agents.runtime.errors.MissingCredentialsError` naming the variable.
"""

from __future__ import annotations

import os
from typing import Any, AsyncIterator

from ..errors import AgentConfigError, MissingCredentialsError
from ..naming import snake_keys
from ..voice import CONTENT_TYPES, AudioStream, MastraVoice, VoiceError, audio_bytes, text_of
from .sdk import server_message

SPEAKERS = ("alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse")
DEFAULT_SPEECH_MODEL = "tts-1"
DEFAULT_LISTENING_MODEL = "whisper-1"
SPEAK_OPTIONS = frozenset({"speed", "response_format", "instructions"})
LISTEN_OPTIONS = frozenset({"filetype", "language", "prompt", "temperature"})
#: keyless OpenAI-compatible servers: the SDK refuses an empty key
PLACEHOLDER_KEY = "not-needed"


def _model_option(value: Any, field: str, default: str) -> dict:
    if value is None:
        return {"name": default}
    if not isinstance(value, dict):
        raise AgentConfigError(field, "must be {'name': ..., 'api_key'?: ...}")
    value = snake_keys(value)
    unknown = set(value) - {"name", "api_key"}
    if unknown:
        raise AgentConfigError(f"{field}.{sorted(unknown)[0]}", "unknown key (allowed: name, api_key)")
    if value.get("name") is not None and not isinstance(value["name"], str):
        raise AgentConfigError(f"{field}.name", "must be a model name, e.g. 'tts-1'")
    return {"name": value.get("name") or default, "api_key": value.get("api_key")}


class OpenAIVoice(MastraVoice):
    name = "openai"

    def __init__(self, *, speech_model: dict | None = None, listening_model: dict | None = None,
                 speaker: str | None = None, api_key: str | None = None, base_url: str | None = None):
        super().__init__(speaker=speaker or "alloy")
        self.speech_model = _model_option(speech_model, "speech_model", DEFAULT_SPEECH_MODEL)
        self.listening_model = _model_option(listening_model, "listening_model", DEFAULT_LISTENING_MODEL)
        self.api_key = api_key
        self._base_url = base_url
        self._clients: dict = {}

    def __repr__(self) -> str:
        return f"OpenAIVoice({self.speech_model['name']}, {self.listening_model['name']})"

    @property
    def base_url(self) -> str | None:
        return self._base_url or os.environ.get("OPENAI_BASE_URL") or None

    def resolve_api_key(self, model: dict) -> str:
        key = model.get("api_key") or self.api_key or os.environ.get("OPENAI_API_KEY")
        if key:
            return key
        if self.base_url is not None:
            return PLACEHOLDER_KEY
        raise MissingCredentialsError("openai (voice)", ["OPENAI_API_KEY"])

    def _client(self, model: dict) -> Any:
        import asyncio

        import openai as openai_sdk

        key, url = self.resolve_api_key(model), self.base_url
        loop = asyncio.get_running_loop()
        cache_key = (id(loop), key, url)
        client = self._clients.get(cache_key)
        if client is None:
            self._clients = {k: v for k, v in self._clients.items() if k[0] == id(loop)}
            client = self._clients[cache_key] = openai_sdk.AsyncOpenAI(api_key=key, base_url=url, max_retries=2)
        return client

    def _error(self, exc: BaseException, what: str) -> VoiceError:
        import openai as openai_sdk

        where = self.base_url or "the default endpoint"
        if isinstance(exc, openai_sdk.APIStatusError):
            detail = server_message(exc.body) or exc.message
            return VoiceError(f"openai {what} failed (HTTP {exc.status_code}): {detail}", code="voice_provider_error",
                              status=exc.status_code)
        if isinstance(exc, openai_sdk.APIConnectionError):
            return VoiceError(f"openai {what}: the connection to {where} failed", code="voice_provider_error")
        return VoiceError(f"openai {what} failed: {exc}", code="voice_provider_error")

    async def speak(self, input: Any, *, speaker: str | None = None, **options: Any) -> AudioStream:
        import openai as openai_sdk

        text = await text_of(input)
        if not text.strip():
            raise VoiceError("nothing to say: the text is empty", code="invalid_text")
        options = snake_keys(options)
        unknown = set(options) - SPEAK_OPTIONS
        if unknown:
            raise VoiceError(f"unknown speak option {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(SPEAK_OPTIONS))})",
                             code="invalid_voice_option")
        fmt = options.pop("response_format", None) or "mp3"
        params = {k: v for k, v in options.items() if v is not None}
        client = self._client(self.speech_model)
        manager = client.audio.speech.with_streaming_response.create(
            model=self.speech_model["name"], voice=speaker or self.speaker, input=text, response_format=fmt, **params)
        try:
            response = await manager.__aenter__()
        except openai_sdk.APIError as exc:
            raise self._error(exc, "speech") from exc

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for chunk in response.iter_bytes():
                    if chunk:
                        yield chunk
            except openai_sdk.APIError as exc:
                raise self._error(exc, "speech") from exc
            finally:
                await manager.__aexit__(None, None, None)

        content_type = response.headers.get("content-type") or CONTENT_TYPES.get(fmt)
        return AudioStream(chunks(), format=fmt, content_type=content_type.split(";")[0].strip() or None)

    async def listen(self, audio: Any, **options: Any) -> str:
        import openai as openai_sdk

        data = await audio_bytes(audio)
        options = snake_keys(options)
        unknown = set(options) - LISTEN_OPTIONS
        if unknown:
            raise VoiceError(f"unknown listen option {sorted(unknown)[0]!r} "
                             f"(allowed: {', '.join(sorted(LISTEN_OPTIONS))})", code="invalid_voice_option")
        filetype = str(options.pop("filetype", None) or "mp3").lower().lstrip(".")
        params = {k: v for k, v in options.items() if v is not None}
        client = self._client(self.listening_model)
        try:
            result = await client.audio.transcriptions.create(
                model=self.listening_model["name"],
                file=(f"audio.{filetype}", data, CONTENT_TYPES.get(filetype, "application/octet-stream")), **params)
        except openai_sdk.APIError as exc:
            raise self._error(exc, "transcription") from exc
        text = getattr(result, "text", None)
        if text is None and isinstance(result, str):
            text = result
        return (text or "").strip()

    async def get_speakers(self) -> list[dict]:
        return [{"voice_id": name} for name in SPEAKERS]

    async def get_listener(self) -> dict:
        return {"enabled": True}


__all__ = ["OpenAIVoice", "SPEAKERS"]
