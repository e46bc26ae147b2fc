"""An agent's voice over HTTP, as Mastra's server routes it (``@mastra/client-js``'s ``agent.voice``):

- ``GET .../voice/speakers`` (and the deprecated ``.../speakers``): ``[{"voiceId", ...}]``; ``[]``
  for an agent without a voice;
- ``GET .../voice/listener``: ``{"enabled": bool}``; ``{"enabled": false}`` without a voice;
- ``POST .../voice/speak`` (and ``.../speak``) ``{"text", "speakerId"?, "options"?}``: the audio,
  streamed as the provider sends it, with its content type (``audio/mpeg`` for MP3);
- ``POST .../voice/listen`` (and ``.../listen``): the audio as a multipart upload (field ``audio``,
  ``options`` a JSON object in a field of its own: what the client sends) or as the raw body with
  an audio content type; answers ``{"text"}``.

Nothing is stored: the transcript goes back to the caller, who sends it as a message if they want
to. Limits (docs/voice.md): ``MASTRA_VOICE_MAX_AUDIO_BYTES`` (413 ``audio_too_large``),
``MASTRA_VOICE_MAX_AUDIO_SECONDS`` for WAV recordings (413 ``audio_too_long``), audio content types
only (415 ``unsupported_audio_type``). Speaking and listening count against the caller's send rate
(``MASTRA_API_SEND_RATE``): each one is a paid provider call.
"""

from __future__ import annotations

import json
import struct

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema

from agents.runtime.json_input import json_decode
from agents.runtime.naming import camel_keys
from agents.runtime.voice import VoiceError

from . import openapi
from .base import ApiView, json_response
from .errors import ApiError
from .parsing import json_body
from .throttling import SEND_SCOPE, SendRateThrottle

NO_VOICE = "No voice provider configured"
#: content types a recording may come as besides ``audio/*`` (browsers record into these containers)
CONTAINER_TYPES = frozenset({"video/webm", "video/ogg", "video/mp4", "application/ogg"})
#: ``filetype`` (what the provider is told) of a recording's content type
FILETYPES = {"audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
             "audio/webm": "webm", "video/webm": "webm", "audio/ogg": "ogg", "video/ogg": "ogg",
             "application/ogg": "ogg", "audio/mp4": "m4a", "audio/m4a": "m4a", "audio/x-m4a": "m4a",
             "video/mp4": "mp4", "audio/flac": "flac", "audio/x-flac": "flac", "audio/aac": "aac"}


def sniffed_filetype(data: bytes) -> str | None:
    """The container of ``data`` by its first bytes (for an upload labelled
    ``application/octet-stream``), or None when it is no audio this server knows."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[:4] == b"OggS":
        return "ogg"
    if data[:4] == b"\x1a\x45\xdf\xa3":
        return "webm"
    if data[:4] == b"fLaC":
        return "flac"
    if data[4:8] == b"ftyp":
        return "m4a"
    if data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "mp3"
    return None


def wav_seconds(data: bytes) -> float | None:
    """The duration of a PCM WAV recording from its header, or None when it cannot tell."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    position, byte_rate = 12, None
    while position + 8 <= len(data):
        chunk, size = data[position:position + 4], struct.unpack("<I", data[position + 4:position + 8])[0]
        if chunk == b"fmt " and size >= 16:
            byte_rate = struct.unpack("<I", data[position + 16:position + 20])[0]
        elif chunk == b"data":
            return size / byte_rate if byte_rate else None
        position += 8 + size + (size & 1)
    return None


def audio_filetype(content_type: str, data: bytes) -> str:
    """The recording's ``filetype``; ``unsupported_audio_type`` (415) for anything but audio."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind in FILETYPES:
        return FILETYPES[kind]
    if kind.startswith("audio/") or kind in CONTAINER_TYPES:
        return kind.split("/", 1)[1].removeprefix("x-")
    if kind in ("", "application/octet-stream"):
        sniffed = sniffed_filetype(data)
        if sniffed is not None:
            return sniffed
    raise ApiError(f"the audio must have an audio content type (audio/webm, audio/mpeg, audio/wav, ...), "
                   f"not {kind or 'none'}", code="unsupported_audio_type")


def audio_limits_check(data: bytes) -> None:
    limit = settings.MASTRA_VOICE_MAX_AUDIO_BYTES
    if len(data) > limit:
        raise ApiError(f"the audio is larger than {limit} bytes", code="audio_too_large")
    seconds = wav_seconds(data)
    if seconds is not None and seconds > settings.MASTRA_VOICE_MAX_AUDIO_SECONDS:
        raise ApiError(f"the recording lasts {seconds:.1f} s; the limit is {settings.MASTRA_VOICE_MAX_AUDIO_SECONDS} s",
                       code="audio_too_long")


def declared_length_check(request) -> None:
    limit = settings.MASTRA_VOICE_MAX_AUDIO_BYTES
    declared = request.META.get("CONTENT_LENGTH") or ""
    # the multipart envelope around the audio takes a few hundred bytes more
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit + 65536):
        raise ApiError(f"the audio is larger than {limit} bytes", code="audio_too_large")


def listen_input(request) -> tuple[bytes, str, dict]:
    """``(audio, filetype, options)`` of a listen request: multipart (``audio`` file, ``options``
    JSON) or a raw audio body."""
    http = request._request
    declared_length_check(http)
    content_type = http.META.get("CONTENT_TYPE", "")
    options: dict = {}
    if content_type.startswith("multipart/form-data"):
        upload = http.FILES.get("audio")
        if upload is None:
            raise ApiError("audio is required: a multipart field 'audio' with the recording", code="missing_audio")
        if upload.size > settings.MASTRA_VOICE_MAX_AUDIO_BYTES:
            raise ApiError(f"the audio is larger than {settings.MASTRA_VOICE_MAX_AUDIO_BYTES} bytes",
                           code="audio_too_large")
        data = upload.read()
        kind = upload.content_type or ""
        raw_options = http.POST.get("options")
        if raw_options:
            options = json_decode(raw_options.encode(), what="options")
            if not isinstance(options, dict):
                raise ApiError("options must be a JSON object", code="invalid_field")
    else:
        data = http.read(settings.MASTRA_VOICE_MAX_AUDIO_BYTES + 1)
        kind = content_type
        if kind.split(";")[0].strip().lower() == "application/json":
            raise ApiError("send the audio as a multipart upload (field 'audio') or as the raw body with its "
                           "audio content type", code="unsupported_audio_type")
    if not data:
        raise ApiError("audio is required: the recording is empty", code="missing_audio")
    audio_limits_check(data)
    return data, audio_filetype(kind, data), options


class VoiceView(ApiView):
    def voice_of(self, agent_id: str):
        """The agent's voice, or None when it has none."""
        agent = self.agent(agent_id)
        return agent.voice if agent.has_voice else None


class SpeakersView(VoiceView):
    @extend_schema(operation_id="agents_voice_speakers", responses=openapi.SPEAKERS, tags=["voice"])
    async def get(self, request, agent_id: str):
        voice = self.voice_of(agent_id)
        return json_response([camel_keys(s) for s in await voice.get_speakers()] if voice is not None else [])


class ListenerView(VoiceView):
    @extend_schema(operation_id="agents_voice_listener", responses=openapi.LISTENER, tags=["voice"])
    async def get(self, request, agent_id: str):
        voice = self.voice_of(agent_id)
        return json_response(await voice.get_listener() if voice is not None else {"enabled": False})


class SpeakView(VoiceView):
    throttle_classes = [SendRateThrottle]
    throttle_scope = SEND_SCOPE

    @extend_schema(operation_id="agents_voice_speak", request=openapi.SPEAK_BODY, responses=openapi.AUDIO,
                   tags=["voice"])
    async def post(self, request, agent_id: str):
        voice = self.voice_of(agent_id)
        body = json_body(request)
        text = body.get("text")
        if text is None or text == "":
            raise ApiError("text is required", code="missing_text")
        if not isinstance(text, str):
            raise ApiError("text must be a string", code="invalid_field")
        options = body.get("options") or {}
        if not isinstance(options, dict):
            raise ApiError("options must be an object", code="invalid_field")
        options = dict(options)
        speaker = body.get("speakerId") or options.pop("speaker", None)
        if speaker is not None and not isinstance(speaker, str):
            raise ApiError("speakerId must be a string", code="invalid_field")
        if voice is None:
            raise VoiceError(NO_VOICE, code="voice_not_configured")
        stream = await voice.speak(text, speaker=speaker, **options)
        response = StreamingHttpResponse(stream, content_type=stream.content_type)
        response["Cache-Control"] = "no-store"
        return response


class ListenView(VoiceView):
    throttle_classes = [SendRateThrottle]
    throttle_scope = SEND_SCOPE

    @extend_schema(operation_id="agents_voice_listen", request=openapi.AUDIO_UPLOAD,
                   responses=openapi.TRANSCRIPT, tags=["voice"])
    async def post(self, request, agent_id: str):
        voice = self.voice_of(agent_id)
        audio, filetype, options = listen_input(request)
        if voice is None:
            raise VoiceError(NO_VOICE, code="voice_not_configured")
        options.setdefault("filetype", filetype)
        return json_response({"text": await voice.listen(audio, **options)})


# Mastra's deprecated names of the routes: the same handlers under operation ids of their own
class SpeakersAliasView(SpeakersView):
    @extend_schema(operation_id="agents_speakers", responses=openapi.SPEAKERS, tags=["voice"], deprecated=True)
    async def get(self, request, agent_id: str):
        return await super().get(request, agent_id)


class SpeakAliasView(SpeakView):
    @extend_schema(operation_id="agents_speak", request=openapi.SPEAK_BODY, responses=openapi.AUDIO, tags=["voice"],
                   deprecated=True)
    async def post(self, request, agent_id: str):
        return await super().post(request, agent_id)


class ListenAliasView(ListenView):
    @extend_schema(operation_id="agents_listen", request=openapi.AUDIO_UPLOAD, responses=openapi.TRANSCRIPT,
                   tags=["voice"], deprecated=True)
    async def post(self, request, agent_id: str):
        return await super().post(request, agent_id)


__all__ = ["ListenAliasView", "ListenView", "ListenerView", "SpeakAliasView", "SpeakView", "SpeakersAliasView",
           "SpeakersView", "audio_filetype", "sniffed_filetype",
           "wav_seconds"]
