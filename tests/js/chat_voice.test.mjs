// The chat page's voice (chat/static/chat/voice.js): what an answer's Play button says, the
// container it records into, and the words of every refusal it shows.
import assert from "node:assert/strict";
import { test } from "node:test";

import { extensionOf, problemMessage, recordingType, refusalMessage, spokenText } from "../../chat/static/chat/voice.js";

test("an answer is spoken without its markdown marks", () => {
  assert.equal(spokenText("echo: hello"), "echo: hello");
  assert.equal(spokenText("# Status\n\n- **Disk** at `80%`\n- see [the runbook](https://x.test/r)\n\n```sh\ndf -h\n```\n"),
    "Status\n\nDisk at 80%\nsee the runbook\n\ndf -h");
  assert.equal(spokenText("1. *first* step\n> quoted"), "first step\nquoted");
  assert.equal(spokenText("snake_case_name and 2 * 3 * 4"), "snake_case_name and 2 * 3 * 4");
  assert.equal(spokenText("```\n```"), "");
  assert.equal(spokenText(undefined), "");
});

test("the recording's container is the first the browser takes, and its file name follows it", () => {
  assert.equal(recordingType((t) => t.startsWith("audio/webm")), "audio/webm;codecs=opus");
  assert.equal(recordingType((t) => t === "audio/mp4"), "audio/mp4");
  assert.equal(recordingType(() => false), "");
  assert.deepEqual(["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/mp4", "", "video/x-unknown"].map(extensionOf),
    ["webm", "ogg", "m4a", "webm", "webm"]);
});

test("a refused microphone says how to allow it", () => {
  const refusal = (name) => refusalMessage(Object.assign(new Error("denied"), { name }));
  assert.equal(refusal("NotAllowedError"), "Microphone access was refused. Allow the microphone for this site in the " +
    "browser's settings, then press the microphone button again.");
  assert.equal(refusal("SecurityError"), refusal("NotAllowedError"));
  assert.equal(refusal("NotFoundError"), "No microphone was found.");
  assert.equal(refusal("NotReadableError"), "The microphone could not be opened (another application may be using it).");
  assert.equal(refusal("TypeError"), "Could not start recording: denied");
});

test("each refused voice request has its own words, with the server's message", () => {
  const said = (status, code, message, what = "transcribe") => problemMessage({ status, code, message }, what);
  assert.equal(said(413, "audio_too_large", "the audio is larger than 1024 bytes"),
    "The recording is too long or too large to transcribe: the audio is larger than 1024 bytes");
  assert.equal(said(413, "audio_too_long", "the recording lasts 400.0 s; the limit is 300 s"),
    "The recording is too long or too large to transcribe: the recording lasts 400.0 s; the limit is 300 s");
  assert.equal(said(415, "unsupported_audio_type", "not text/plain"),
    "The server does not take this recording's format: not text/plain");
  assert.equal(said(400, "missing_credentials", "provider 'openai (voice)' needs an API key: set OPENAI_API_KEY", "play the answer"),
    "The agent's voice is not set up on the server: provider 'openai (voice)' needs an API key: set OPENAI_API_KEY");
  assert.equal(said(400, "voice_not_configured", "No voice provider configured"),
    "This agent has no voice: No voice provider configured");
  assert.equal(said(429, "throttled", "Request was throttled."), "Too many requests: wait a moment, then try again.");
  assert.equal(said(502, "voice_provider_error", "openai speech failed (HTTP 500)", "play the answer"),
    "The voice provider failed: openai speech failed (HTTP 500)");
  assert.equal(said(400, "invalid_field", ""), "Could not transcribe.");
  assert.equal(problemMessage({ status: 0 }, "play the answer"), "Could not play the answer (the server did not answer). Try again.");
});
