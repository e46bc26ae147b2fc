"""The chat page's voice end to end: a real daphne process, headless Chromium with a fake microphone
(``--use-fake-device-for-media-stream`` playing a WAV written here, the permission prompt answered by
``--use-fake-ui-for-media-stream``).

A recording transcribed by an OpenAI voice (a local fake of ``/v1/audio/transcriptions`` and
``/v1/audio/speech``) lands in the composer and is sent; its answer is played, streamed into the
page's ``<audio>``. The offline ``LocalVoice`` does the same without a key (a WAV answer); an agent
without a voice has neither button; a refused microphone, a recording over the server's size limit
and a voice without its key each show their message. Screenshots go to test-output/screenshots/.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from agents.runtime.voice import wav_tone
from tests.chat.browser import chromium, daphne_server, orm, screenshot
from tests.chat.test_e2e import PASSWORD, assistant_texts, sign_in, wait_idle, wait_text
from tests.runtime.providers.wire import Reply, WireServer, json_reply

pytestmark = pytest.mark.django_db(transaction=True)

FAKE_MICROPHONE = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
REFUSED_MICROPHONE = ["--use-fake-ui-for-media-stream=deny", "--use-fake-device-for-media-stream"]
REFUSED = ("Microphone access was refused. Allow the microphone for this site in the browser's settings, "
           "then press the microphone button again.")

#: what the test sees of the page's audio: its events, and what each object URL was made of
WATCH_AUDIO = """
window.audioEvents = [];
for (const type of ["play", "playing", "ended", "error"]) {
  document.addEventListener(type, (e) => {
    if (e.target.id === "voice-player") {
      window.audioEvents.push({type, src: e.target.src, time: e.target.currentTime});
    }
  }, true);
}
window.objectUrls = [];
const makeUrl = URL.createObjectURL;
URL.createObjectURL = function (object) {
  const url = makeUrl.call(URL, object);
  window.objectUrls.push({url, kind: object instanceof MediaSource ? "MediaSource" : "Blob", type: object.type || ""});
  return url;
};
"""


def silent_mp3(seconds: float) -> bytes:
    """MPEG-1 layer III frames of silence (128 kbit/s, 44.1 kHz, mono: 417 bytes, 1,152 samples each)."""
    frame = bytes([0xFF, 0xFB, 0x90, 0xC0]) + bytes(413)
    return frame * round(seconds * 44100 / 1152)


def microphone_wav(tmp_path) -> list[str]:
    """Chromium's fake microphone plays this WAV (a tone, looped) instead of its beep."""
    path = tmp_path / "microphone.wav"
    path.write_bytes(wav_tone("one two three four five six seven eight nine ten", rate=48000))
    return [f"--use-file-for-fake-audio-capture={path}"]


def pick(page, agent_id: str) -> None:
    page.select_option("#agent-select", agent_id)
    page.wait_for_selector("#conn-status[data-state=connected]")


def record(page, *, keyboard: bool = False, shot: str | None = None) -> None:
    """Record about a second and stop; with ``keyboard``, Enter starts and Space stops; ``shot``
    names a screenshot taken while recording."""
    mic = page.locator("#voice-record")
    if keyboard:
        mic.focus()
        page.keyboard.press("Enter")
    else:
        mic.click()
    page.wait_for_selector("#voice-record[data-state=recording]")
    assert mic.get_attribute("aria-label") == "Stop recording and transcribe"
    assert page.inner_text("#voice-status") == "Recording… press the microphone button again to stop."
    if shot:
        screenshot(page, shot)
    page.wait_for_timeout(1200)  # the recording's length: MediaRecorder hands a chunk a second
    if keyboard:
        page.keyboard.press("Space")
    else:
        mic.click()


def played(events: list[dict]) -> bool:
    """Played once to its end: ``play`` first, ``ended`` last, no error (``playing`` again after a wait
    for data is the network's timing, not the page's)."""
    types = [e["type"] for e in events]
    return (types[0] == "play" and types[-1] == "ended" and types.count("play") == types.count("ended") == 1
            and "playing" in types and "error" not in types)


def wait_audio(page, event: str) -> list[dict]:
    page.wait_for_function("t => window.audioEvents.some(e => e.type === t)", arg=event, timeout=20_000)
    return page.evaluate("window.audioEvents")


def test_a_recording_is_transcribed_into_the_composer_sent_and_its_answer_streamed_aloud(
        db_url_for_subprocess, tmp_path):
    orm(lambda: get_user_model().objects.create_user("ann", password=PASSWORD))
    mp3 = silent_mp3(3.0)
    with WireServer() as openai:
        openai.reply(json_reply(200, {"text": " Turn on the lights. "}),
                     Reply(headers={"content-type": "audio/mpeg"}, events=[mp3[:4170], mp3[4170:]]))
        with daphne_server(db_url_for_subprocess, tmp_path, MASTRA_TEST_VOICE="openai",
                           OPENAI_BASE_URL=openai.url + "/v1", OPENAI_API_KEY="sk-test-voice",
                           NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost") as base, \
                chromium(tmp_path, FAKE_MICROPHONE + microphone_wav(tmp_path)) as browser:
            page = browser.new_page()
            page.add_init_script(WATCH_AUDIO)
            sign_in(page, base)
            pick(page, "chat-bot")
            mic = page.locator("#voice-record")
            assert mic.is_visible() and mic.get_attribute("aria-label") == "Record a voice message"

            record(page, keyboard=True, shot="chat-voice-recording-1280")
            page.wait_for_function("document.querySelector('#composer').value === 'Turn on the lights.'")
            assert page.inner_text("#voice-status") == "Transcribed into the message: edit it or send it."
            assert page.evaluate("document.activeElement.id") == "composer"
            assert page.inner_text("#voice-error") == ""
            assert mic.get_attribute("data-state") == "idle"

            # what the provider heard: the browser's WebM recording, uploaded as the API's client does
            transcription = openai.requests[0]
            assert transcription.path == "/v1/audio/transcriptions"
            assert transcription.headers["authorization"] == "Bearer sk-test-voice"
            assert b'name="model"\r\n\r\nwhisper-1' in transcription.body
            assert b'filename="audio.webm"' in transcription.body
            assert b"\x1a\x45\xdf\xa3" in transcription.body  # the WebM (EBML) header

            page.press("#composer", "Enter")
            wait_text(page, 0, "echo: Turn on the lights.")
            wait_idle(page)
            assert page.locator(".msg-user .plain").all_inner_texts() == ["Turn on the lights."]

            play = page.locator(".msg-assistant .speak-btn")
            assert play.count() == 1 and play.get_attribute("aria-label") == "Play this answer aloud"
            play.focus()
            with page.expect_request("**/api/agents/chat-bot/voice/speak") as speak:
                page.keyboard.press("Enter")
            assert json.loads(speak.value.post_data) == {"text": "echo: Turn on the lights."}
            page.wait_for_selector(".speak-btn[data-state=playing]")
            assert play.get_attribute("aria-label") == "Stop playing this answer"
            assert page.inner_text("#voice-status") == "Playing the answer."
            screenshot(page, "chat-voice-playing-1280")

            events = wait_audio(page, "ended")
            assert played(events)
            assert events[-1]["time"] == pytest.approx(len(mp3) / 417 * 1152 / 44100, abs=0.1)
            # streamed: the MP3 went through a MediaSource, appended as it came
            [made] = page.evaluate("window.objectUrls")
            assert made["kind"] == "MediaSource" and made["url"].startswith("blob:" + base)
            assert events[0]["src"] == made["url"]
            assert page.get_attribute(".speak-btn", "data-state") == "idle"
            assert page.inner_text("#voice-status") == "Finished playing."

            speech = openai.requests[1]
            assert speech.path == "/v1/audio/speech"
            assert speech.body == {"model": "tts-1", "voice": "alloy", "input": "echo: Turn on the lights.",
                                   "response_format": "mp3"}
            assert len(openai.requests) == 2


def test_only_agents_with_a_voice_have_the_buttons_and_the_offline_voice_needs_no_key(db_url_for_subprocess, tmp_path):
    orm(lambda: get_user_model().objects.create_user("ann", password=PASSWORD))
    with daphne_server(db_url_for_subprocess, tmp_path, MASTRA_TEST_VOICE="local") as base, \
            chromium(tmp_path, FAKE_MICROPHONE) as browser:
        page = browser.new_page()
        page.add_init_script(WATCH_AUDIO)
        sign_in(page, base)
        # the first agent by name has no voice: no microphone, no Play on its answers
        assert page.input_value("#agent-select") == "helper"
        page.fill("#composer", "hello")
        page.press("#composer", "Enter")
        wait_text(page, 0, "echo: hello")
        wait_idle(page)
        assert page.locator("#voice-record").is_hidden()
        assert page.locator(".speak-btn").count() == 0
        screenshot(page, "chat-voice-none-1280")

        page.click("#new-thread")
        page.wait_for_selector("#transcript .empty")
        pick(page, "chat-bot")
        assert page.locator("#voice-record").is_visible()
        page.fill("#composer", "Note:")
        record(page)
        page.wait_for_function("/^Note: transcript of \\d+ bytes$/.test(document.querySelector('#composer').value)")
        heard = page.input_value("#composer")
        page.press("#composer", "Enter")
        wait_text(page, 0, "echo: " + heard)
        wait_idle(page)

        with page.expect_request("**/api/agents/chat-bot/voice/speak") as speak:
            page.click(".speak-btn")
        assert json.loads(speak.value.post_data) == {"text": "echo: " + heard}
        events = wait_audio(page, "ended")
        assert played(events)
        # a WAV is no type for a MediaSource: the page plays it once it has all of it
        assert page.evaluate("window.objectUrls.map(u => [u.kind, u.type])") == [["Blob", "audio/wav"]]
        assert events[-1]["time"] == pytest.approx(0.08 * len(("echo: " + heard).split()), abs=0.05)

        page.emulate_media(color_scheme="dark")
        page.set_viewport_size({"width": 360, "height": 740})
        page.wait_for_function("document.getAnimations().length === 0")  # the thread drawer slid away
        screenshot(page, "chat-voice-dark-360")

        # back to the agent without a voice: the microphone goes
        pick(page, "helper")
        assert page.locator("#voice-record").is_hidden()
        assert assistant_texts(page) == ["echo: " + heard]


def test_a_refused_microphone_a_recording_over_the_limit_and_a_missing_key_each_say_so(db_url_for_subprocess, tmp_path):
    orm(lambda: get_user_model().objects.create_user("ann", password=PASSWORD))
    # an OpenAI voice without a key or a server; recordings of at most 1 KiB
    with daphne_server(db_url_for_subprocess, tmp_path, MASTRA_TEST_VOICE="openai", OPENAI_API_KEY="",
                       OPENAI_BASE_URL="", MASTRA_VOICE_MAX_AUDIO_BYTES="1024") as base:
        with chromium(tmp_path, REFUSED_MICROPHONE, profile="refusing") as browser:
            page = browser.new_page()
            sign_in(page, base)
            pick(page, "chat-bot")
            page.click("#voice-record")
            page.wait_for_function("document.querySelector('#voice-error').textContent !== ''")
            assert page.inner_text("#voice-error") == REFUSED
            assert page.get_attribute("#voice-error", "role") == "alert"
            assert page.get_attribute("#voice-record", "data-state") == "idle"
            assert page.get_attribute("#voice-record", "aria-label") == "Record a voice message"
            assert page.inner_text("#voice-status") == ""
            screenshot(page, "chat-voice-refused-1280")
            page.set_viewport_size({"width": 360, "height": 740})
            page.wait_for_function("document.getAnimations().length === 0")  # the thread drawer slid away
            screenshot(page, "chat-voice-refused-360")

        with chromium(tmp_path, FAKE_MICROPHONE, profile="allowing") as browser:
            page = browser.new_page()

            # a page that took its limits before they were lowered: the server's 413 is what it shows
            def stale_limits(route):
                data = route.fetch().json()
                data["voiceLimits"]["maxAudioBytes"] = 10 * 1024 * 1024
                route.fulfill(json=data)

            page.route("**/chat/api/agents", stale_limits)
            sign_in(page, base)
            pick(page, "chat-bot")
            with page.expect_response("**/api/agents/chat-bot/voice/listen") as listened:
                record(page)
            assert listened.value.status == 413
            page.wait_for_function("document.querySelector('#voice-error').textContent !== ''")
            assert page.inner_text("#voice-error") == ("The recording is too long or too large to transcribe: "
                                                        "the audio is larger than 1024 bytes")
            assert page.input_value("#composer") == ""
            assert page.get_attribute("#voice-record", "data-state") == "idle"

            page.fill("#composer", "hello")
            page.press("#composer", "Enter")
            wait_text(page, 0, "echo: hello")
            wait_idle(page)
            page.click(".speak-btn")
            page.wait_for_function("document.querySelector('#voice-error').textContent.includes('API key')")
            assert page.inner_text("#voice-error") == ("The agent's voice is not set up on the server: provider "
                                                        "'openai (voice)' needs an API key: set OPENAI_API_KEY")
            assert page.get_attribute(".speak-btn", "data-state") == "idle"
            assert page.get_attribute(".speak-btn", "aria-label") == "Play this answer aloud"
            screenshot(page, "chat-voice-no-key-1280")
