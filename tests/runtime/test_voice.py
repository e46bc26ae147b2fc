"""Voices: ``agent.voice.speak / listen / get_speakers / get_listener`` with the offline
``LocalVoice``, ``CompositeVoice``'s halves, and ``OpenAIVoice`` (the real ``openai`` SDK) against
a local server speaking OpenAI's audio endpoints."""

from __future__ import annotations

import struct

import pytest

from agents.runtime import Agent, AudioStream, CompositeVoice, LocalVoice, MissingCredentialsError, OpenAIVoice
from agents.runtime.errors import AgentConfigError
from agents.runtime.voice import MastraVoice, VoiceError
from tests.runtime.providers.wire import Reply, WireServer, isolate_env, json_reply

MP3 = bytes([0xFF, 0xF3, 0x44, 0xC4, 0x4D, 0x4F, 0x43, 0x4B, 0x00, 0x80, 0xFE, 0x0A])


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    isolate_env(monkeypatch)


@pytest.fixture
def server():
    with WireServer() as srv:
        yield srv


def agent_with(voice=None) -> Agent:
    return Agent(id="talker", instructions="x", model="local/echo", voice=voice)


@pytest.mark.asyncio
async def test_a_local_voice_speaks_a_wav_and_hears_a_deterministic_transcript():
    agent = agent_with(CompositeVoice(input=LocalVoice(transcript="turn on the lights"), output=LocalVoice()))

    stream = await agent.voice.speak("hello there world")
    assert isinstance(stream, AudioStream)
    assert (stream.format, stream.content_type) == ("wav", "audio/wav")
    audio = await stream.read()
    assert audio[:4] == b"RIFF" and audio[8:12] == b"WAVE"
    assert struct.unpack("<I", audio[40:44])[0] == 2 * int(8000 * 0.24)  # 3 words × 80 ms, 16-bit samples
    assert await agent.voice.listen(b"\x00" * 10) == "turn on the lights"
    assert await LocalVoice().listen([b"ab", b"cde"]) == "transcript of 5 bytes"
    assert await agent.voice.get_speakers() == [{"voice_id": "low", "name": "Low"}, {"voice_id": "high", "name": "High"}]
    assert await agent.voice.get_listener() == {"enabled": True}


@pytest.mark.asyncio
async def test_an_agent_without_a_voice_says_so_on_every_call():
    agent = agent_with()
    for call in (agent.voice.speak("hi"), agent.voice.listen(b"x"), agent.voice.get_speakers(),
                 agent.voice.get_listener()):
        with pytest.raises(VoiceError) as info:
            await call
        assert info.value.code == "voice_not_configured"
        assert info.value.message == ("No voice provider configured: agent 'talker' has no voice "
                                      "(Agent(voice=CompositeVoice(...)))")


@pytest.mark.asyncio
async def test_a_composite_voice_without_a_half_names_the_missing_one():
    speaking_only = CompositeVoice(output=LocalVoice())
    with pytest.raises(VoiceError) as info:
        await speaking_only.listen(b"abc")
    assert (info.value.code, info.value.message) == (
        "voice_not_configured", "No listen provider configured: give CompositeVoice an input")
    assert await speaking_only.get_listener() == {"enabled": False}
    with pytest.raises(VoiceError) as info:
        await CompositeVoice(input=LocalVoice()).speak("hi")
    assert info.value.message == "No speak provider configured: give CompositeVoice an output"
    with pytest.raises(AgentConfigError) as info:
        CompositeVoice(input="openai")
    assert info.value.field == "voice.input"


def test_a_voice_says_whether_it_speaks_and_listens():
    class SpeakingOnly(MastraVoice):
        async def speak(self, input, *, speaker=None, **options):
            return AudioStream.of_bytes(b"x", format="mp3")

    abilities = lambda voice: (voice.speaks, voice.listens)  # noqa: E731
    assert abilities(LocalVoice()) == (True, True)
    assert abilities(OpenAIVoice()) == (True, True)
    assert abilities(SpeakingOnly()) == (True, False)
    assert abilities(MastraVoice()) == (False, False)
    assert abilities(CompositeVoice(input=LocalVoice())) == (False, True)
    assert abilities(CompositeVoice(output=LocalVoice(), input=SpeakingOnly())) == (True, False)
    assert abilities(agent_with().voice) == (False, False)
    assert abilities(agent_with(CompositeVoice(input=LocalVoice(), output=LocalVoice())).voice) == (True, True)


@pytest.mark.asyncio
async def test_empty_text_and_empty_audio_are_refused():
    voice = LocalVoice()
    with pytest.raises(VoiceError) as info:
        await voice.speak("   ")
    assert info.value.code == "invalid_text"
    with pytest.raises(VoiceError) as info:
        await voice.listen(b"")
    assert info.value.code == "invalid_audio"


@pytest.mark.asyncio
async def test_openai_voice_streams_speech_from_the_speech_endpoint(server):
    server.reply(Reply(headers={"content-type": "audio/mpeg"}, events=[MP3[:4], MP3[4:]]))
    voice = OpenAIVoice(speech_model={"name": "tts-1-hd"}, speaker="nova", api_key="sk-voice",
                        base_url=server.url + "/v1")

    stream = await voice.speak("Good morning", speed=1.25)
    chunks = [chunk async for chunk in stream]

    assert b"".join(chunks) == MP3
    assert (stream.format, stream.content_type) == ("mp3", "audio/mpeg")
    [request] = server.requests
    assert request.path == "/v1/audio/speech"
    assert request.headers["authorization"] == "Bearer sk-voice"
    assert request.body == {"model": "tts-1-hd", "voice": "nova", "input": "Good morning", "response_format": "mp3",
                            "speed": 1.25}


@pytest.mark.asyncio
async def test_openai_voice_uses_the_speaker_of_the_call(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")  # a compatible server: no key needed
    server.reply(Reply(headers={"content-type": "audio/wav"}, events=[b"RIFF...."]))

    stream = await OpenAIVoice().speak("hi", speaker="echo", response_format="wav")

    assert await stream.read() == b"RIFF...."
    assert stream.content_type == "audio/wav"
    assert server.requests[0].body == {"model": "tts-1", "voice": "echo", "input": "hi", "response_format": "wav"}
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


@pytest.mark.asyncio
async def test_openai_voice_transcribes_a_multipart_upload(server):
    server.reply(json_reply(200, {"text": " Turn on the lights. "}))
    voice = OpenAIVoice(listening_model={"name": "whisper-1", "apiKey": "sk-listen"}, base_url=server.url + "/v1")

    text = await voice.listen(b"OggS-fake-audio", filetype="ogg", language="en")

    assert text == "Turn on the lights."
    [request] = server.requests
    assert request.path == "/v1/audio/transcriptions"
    assert request.headers["authorization"] == "Bearer sk-listen"
    assert request.headers["content-type"].startswith("multipart/form-data; boundary=")
    raw = request.body
    assert b'name="model"\r\n\r\nwhisper-1' in raw
    assert b'name="language"\r\n\r\nen' in raw
    assert b'filename="audio.ogg"' in raw and b"Content-Type: audio/ogg" in raw
    assert b"OggS-fake-audio" in raw


@pytest.mark.asyncio
async def test_openai_voice_errors_name_the_status_or_the_missing_key(server):
    server.reply(json_reply(401, {"error": {"message": "Incorrect API key provided: sk-wrong-0123456789abcdef"}}))
    voice = OpenAIVoice(api_key="sk-wrong-0123456789abcdef", base_url=server.url + "/v1")
    with pytest.raises(VoiceError) as info:
        await voice.speak("hi")
    assert (info.value.code, info.value.status) == ("voice_provider_error", 401)
    assert info.value.message.startswith("openai speech failed (HTTP 401): Incorrect API key provided: ")
    assert "sk-wrong-0123456789abcdef" not in info.value.message
    with pytest.raises(VoiceError) as info:
        await voice.listen(b"abc")
    assert info.value.status == 401 and info.value.message.startswith("openai transcription failed (HTTP 401)")
    with pytest.raises(MissingCredentialsError) as missing:
        await OpenAIVoice().speak("hi")
    assert missing.value.message == "provider 'openai (voice)' needs an API key: set OPENAI_API_KEY"


def test_openai_voice_options_are_checked_when_built():
    with pytest.raises(AgentConfigError) as info:
        OpenAIVoice(speech_model={"name": "tts-1", "voice": "alloy"})
    assert info.value.field == "speech_model.voice"
    assert OpenAIVoice().speaker == "alloy"
