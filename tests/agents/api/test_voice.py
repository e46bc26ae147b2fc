"""The voice routes, byte for byte as the reference Mastra server answers them for its
``voice-agent`` (a mock ``CompositeVoice``: fixed audio bytes, ``transcript of <N> bytes``, two
speakers) and for an agent without a voice; then the limits (size, WAV duration, content types)."""

from __future__ import annotations

import struct

import pytest
from django.test.client import MULTIPART_CONTENT, encode_multipart

from agents.registry import get_mastra
from agents.runtime import Agent, AudioStream, CompositeVoice, Mastra, MastraVoice
from agents.runtime.voice import wav_tone
from tests.agents.api.conftest import Api, body

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

# the reference server's mock audio: a fake MP3 frame header, a marker and a non-UTF-8 byte
MOCK_AUDIO = bytes([0xFF, 0xF3, 0x44, 0xC4, 0x4D, 0x4F, 0x43, 0x4B, 0x00, 0x80, 0xFE, 0x0A])
SPEAKERS = [{"voice_id": "mock-alto", "name": "Alto", "language": "en"},
            {"voice_id": "mock-bass", "name": "Bass", "language": "en"}]


class MockVoice(MastraVoice):
    """real-server.mjs's MockVoice, in Python."""

    def __init__(self):
        super().__init__(speaker="mock-alto", name="mock-voice")
        self.spoken: list[tuple[str, str | None, dict]] = []
        self.heard: list[tuple[bytes, dict]] = []

    async def speak(self, input, *, speaker=None, **options):
        self.spoken.append((input, speaker, options))
        return AudioStream.of_bytes(MOCK_AUDIO, format="mp3", chunk_size=4)

    async def listen(self, audio, **options):
        self.heard.append((audio, options))
        return f"transcript of {len(audio)} bytes"

    async def get_speakers(self):
        return SPEAKERS

    async def get_listener(self):
        return {"enabled": True}


voice = MockVoice()
mastra = Mastra(agents={
    "voice-agent": Agent(id="voice-agent", name="Voice", instructions="x", model="local/echo",
                         voice=CompositeVoice(input=voice, output=voice)),
    "echo": Agent(id="echo", name="Echo", instructions="x", model="local/echo"),
})


@pytest.fixture(autouse=True)
def voice_site(api_site, settings):
    settings.MASTRA = f"{__name__}:mastra"
    get_mastra.cache_clear()
    voice.spoken.clear()
    voice.heard.clear()
    yield
    get_mastra.cache_clear()


async def upload(api: Api, path: str, audio: bytes, content_type: str, options: str | None = None):
    from django.core.files.uploadedfile import SimpleUploadedFile

    fields = {"audio": SimpleUploadedFile("blob", audio, content_type=content_type)}
    if options is not None:
        fields["options"] = options
    return await api.client.post(path, encode_multipart("BoUnDaRy", fields),
                                 content_type="multipart/form-data; boundary=BoUnDaRy", headers=api.headers)


async def streamed(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


@pytest.mark.parametrize("path", ["voice/speakers", "speakers"])
async def test_speakers_are_the_voices_list_in_camel_case(alice: Api, path):
    response = await alice.get(f"/api/agents/voice-agent/{path}")
    assert response.status_code == 200
    assert response.content == (b'[{"voiceId":"mock-alto","name":"Alto","language":"en"},'
                                b'{"voiceId":"mock-bass","name":"Bass","language":"en"}]')


async def test_the_listener_says_whether_the_agent_listens(alice: Api):
    assert (await alice.get("/api/agents/voice-agent/voice/listener")).content == b'{"enabled":true}'


async def test_speak_streams_the_audio_bytes_with_their_content_type(alice: Api):
    response = await alice.post("/api/agents/voice-agent/voice/speak", {"text": "hello", "speakerId": "mock-bass"})
    assert response.status_code == 200
    assert response["Content-Type"] == "audio/mpeg"
    assert await streamed(response) == MOCK_AUDIO
    assert voice.spoken == [("hello", "mock-bass", {})]


async def test_speak_takes_the_speaker_from_the_clients_options(alice: Api):
    # @mastra/client-js sends {text, options: {speaker}}
    response = await alice.post("/api/agents/voice-agent/voice/speak", {"text": "hi", "options": {"speaker": "mock-alto",
                                                                                                 "speed": 1.5}})
    assert await streamed(response) == MOCK_AUDIO
    assert voice.spoken == [("hi", "mock-alto", {"speed": 1.5})]


async def test_speak_without_text_is_400_as_mastra(alice: Api):
    response = await alice.post("/api/agents/voice-agent/voice/speak", {"text": ""})
    assert response.status_code == 400
    assert body(response) == {"error": "text is required", "code": "missing_text", "message": "text is required"}


async def test_listen_transcribes_a_multipart_upload_as_the_client_sends_it(alice: Api):
    response = await upload(alice, "/api/agents/voice-agent/voice/listen", b"abcdefghij", "audio/webm",
                            options='{"language":"en"}')
    assert response.status_code == 200, response.content
    assert response.content == b'{"text":"transcript of 10 bytes"}'
    assert voice.heard == [(b"abcdefghij", {"language": "en", "filetype": "webm"})]


async def test_listen_takes_a_raw_audio_body(alice: Api):
    response = await alice.client.post("/api/agents/voice-agent/listen", MOCK_AUDIO, content_type="audio/mpeg",
                                       headers=alice.headers)
    assert response.content == b'{"text":"transcript of 12 bytes"}'
    assert voice.heard[0][1] == {"filetype": "mp3"}


async def test_an_agent_without_a_voice_answers_as_mastra_does(alice: Api):
    assert (await alice.get("/api/agents/echo/voice/speakers")).content == b"[]"
    assert (await alice.get("/api/agents/echo/voice/listener")).content == b'{"enabled":false}'
    for response in (await alice.post("/api/agents/echo/voice/speak", {"text": "hi"}),
                     await upload(alice, "/api/agents/echo/voice/listen", b"abc", "audio/webm")):
        assert response.status_code == 400
        assert body(response) == {"error": "No voice provider configured", "code": "voice_not_configured",
                                  "message": "No voice provider configured"}


async def test_unknown_agents_and_anonymous_callers_are_refused(alice: Api, anonymous: Api):
    assert (await alice.get("/api/agents/nope/voice/speakers")).status_code == 404
    assert (await anonymous.get("/api/agents/voice-agent/voice/speakers")).status_code == 401
    assert (await anonymous.post("/api/agents/voice-agent/voice/speak", {"text": "hi"})).status_code == 401
    assert voice.spoken == []


async def test_audio_past_the_size_limit_is_413_and_never_reaches_the_voice(alice: Api, settings):
    settings.MASTRA_VOICE_MAX_AUDIO_BYTES = 2048
    response = await upload(alice, "/api/agents/voice-agent/voice/listen", b"\x1a\x45\xdf\xa3" + b"x" * 2045,
                            "audio/webm")
    assert response.status_code == 413
    assert body(response)["code"] == "audio_too_large"
    raw = await alice.client.post("/api/agents/voice-agent/voice/listen", b"x" * 100_000, content_type="audio/webm",
                                  headers=alice.headers)
    assert (raw.status_code, body(raw)["code"]) == (413, "audio_too_large")
    assert voice.heard == []


async def test_a_wav_recording_past_the_duration_limit_is_413(alice: Api, settings):
    settings.MASTRA_VOICE_MAX_AUDIO_SECONDS = 1
    long = wav_tone(" ".join(["word"] * 20))  # 1.6 s
    response = await upload(alice, "/api/agents/voice-agent/voice/listen", long, "audio/wav")
    assert (response.status_code, body(response)["code"]) == (413, "audio_too_long")
    assert body(response)["message"] == "the recording lasts 1.6 s; the limit is 1 s"
    short = wav_tone("two words")
    assert (await upload(alice, "/api/agents/voice-agent/voice/listen", short, "audio/wav")).status_code == 200


@pytest.mark.parametrize("content_type,audio", [("text/plain", b"hello"), ("image/png", b"\x89PNG...."),
                                                ("application/octet-stream", b"not audio at all")])
async def test_what_is_not_audio_is_415(alice: Api, content_type, audio):
    response = await upload(alice, "/api/agents/voice-agent/voice/listen", audio, content_type)
    assert (response.status_code, body(response)["code"]) == (415, "unsupported_audio_type")
    assert voice.heard == []


async def test_an_unlabelled_recording_is_recognised_by_its_first_bytes(alice: Api):
    wav = wav_tone("hi")
    response = await upload(alice, "/api/agents/voice-agent/voice/listen", wav, "application/octet-stream")
    assert response.status_code == 200
    assert voice.heard[0][1] == {"filetype": "wav"}
    assert struct.unpack("<I", wav[24:28])[0] == 8000
