/* Voice in the chat (docs/chat.md, Voice): the microphone button records a message (MediaRecorder),
 * the agent's voice transcribes it (POST /api/agents/<id>/voice/listen) and the text lands in the
 * composer, to edit or send; the Play button of an answer has it spoken (POST .../voice/speak) into
 * one <audio> element, streamed through Media Source Extensions when the browser plays the audio's
 * type that way (MP3), else once the audio is complete (WAV). Only for agents whose voice listens
 * (the microphone) or speaks (Play): the page's agent list says which.
 *
 * What happens is said in #voice-status (a polite live region); what went wrong in #voice-error
 * (an alert), in words: a refused microphone, a recording over the server's limits (413), a format
 * it does not take (415), a voice without its API key, a provider that failed.
 */
import { post } from "./api.js";

export const RECORD_LABEL = "Record a voice message";
export const STOP_RECORDING_LABEL = "Stop recording and transcribe";
export const PLAY_LABEL = "Play this answer aloud";
export const STOP_PLAYING_LABEL = "Stop playing this answer";

/* The container to record into: the first ``isTypeSupported`` takes (Chromium and Firefox: WebM
 * with Opus; Safari: MP4), or "" to let the browser choose. */
export function recordingType(isTypeSupported) {
  const types = ["audio/webm;codecs=opus", "audio/webm", "audio/ogg;codecs=opus", "audio/mp4"];
  for (let i = 0; i < types.length; i += 1) if (isTypeSupported(types[i])) return types[i];
  return "";
}

/* The file name extension of a recording of content type ``type``. */
export function extensionOf(type) {
  const kind = String(type || "").split(";")[0].trim();
  return { "audio/ogg": "ogg", "audio/mp4": "m4a", "audio/mpeg": "mp3", "audio/wav": "wav" }[kind] || "webm";
}

/* What to say of an answer written in markdown: its words without the marks (fences, inline code
 * ticks, link targets, heading and list markers, emphasis stars). */
export function spokenText(markdown) {
  return String(markdown || "")
    .replace(/^\s*(```|~~~).*$/gm, "")
    .replace(/`([^`\n]*)`/g, "$1")
    .replace(/!?\[([^\]\n]*)\]\([^)\n]*\)/g, "$1")
    .replace(/^[ \t]{0,3}(#{1,6}|>|[-*+]|\d+[.)])[ \t]+/gm, "")
    .replace(/(\*\*|\*)(?=\S)([^*\n]*?\S)\1/g, "$2")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/* The message for a getUserMedia refusal (a DOMException by name). */
export function refusalMessage(error) {
  const name = error && error.name;
  if (name === "NotAllowedError" || name === "SecurityError") {
    return "Microphone access was refused. Allow the microphone for this site in the browser's settings, " +
      "then press the microphone button again.";
  }
  if (name === "NotFoundError" || name === "OverconstrainedError") return "No microphone was found.";
  if (name === "NotReadableError" || name === "AbortError") {
    return "The microphone could not be opened (another application may be using it).";
  }
  return "Could not start recording" + (error && error.message ? ": " + error.message : ".");
}

/* The message for a failed voice request: ``problem`` is {status, code, message} (the server's
 * JSON error) or {status: 0} when the server did not answer; ``what`` is "transcribe" or "play". */
export function problemMessage(problem, what) {
  const said = problem && problem.message ? ": " + problem.message : ".";
  const status = problem ? problem.status : 0;
  const code = problem ? problem.code : "";
  if (!status) return "Could not " + what + " (the server did not answer). Try again.";
  if (status === 413) return "The recording is too long or too large to transcribe" + said;
  if (status === 415) return "The server does not take this recording's format" + said;
  if (code === "missing_credentials") return "The agent's voice is not set up on the server" + said;
  if (code === "voice_not_configured") return "This agent has no voice" + said;
  if (status === 429) return "Too many requests: wait a moment, then try again.";
  if (code === "voice_provider_error") return "The voice provider failed" + said;
  return "Could not " + what + said;
}

function voiceUrl(agentId, route) {
  return "/api/agents/" + encodeURIComponent(agentId) + "/voice/" + route;
}

/* {status, code, message} of a refused request (its JSON error when it has one). */
function refused(response) {
  return response.json().catch(function () { return {}; }).then(function (body) {
    throw { status: response.status, code: body.code || "", message: body.message || "" };
  });
}

/* A request that failed before an answer (a network error), or the refusal itself. */
function asProblem(error) {
  return error && typeof error.status === "number" ? error : { status: 0 };
}

/* createVoice(page) -> {refresh(), setLimits(limits), turnControls(wrap, agentId, text)}.
 * ``page.agent(id)`` is the agent of that id in the page's list (with its ``voice``: {speak,
 * listen}) or null; ``page.current()`` the agent the page talks to; ``page.composer`` the textarea. */
export function createVoice(page) {
  const $ = function (id) { return document.getElementById(id); };
  const record = $("voice-record");
  const status = $("voice-status");
  const alert = $("voice-error");
  const audio = document.createElement("audio");
  audio.id = "voice-player";
  audio.preload = "auto";
  document.body.appendChild(audio);

  let limits = { maxAudioBytes: 10 * 1024 * 1024, maxAudioSeconds: 300 };
  let phase = "idle"; // idle | starting | recording | transcribing
  let finish = null; // stops the recording in progress
  let playing = null; // {button, agentId, url, controller}

  function say(text) { status.textContent = text; }
  function fail(text) { alert.textContent = text; }
  function clearError() { alert.textContent = ""; }

  function setPhase(next) {
    phase = next;
    record.setAttribute("data-state", next);
    record.setAttribute("aria-label", next === "recording" ? STOP_RECORDING_LABEL : RECORD_LABEL);
    record.title = next === "recording" ? STOP_RECORDING_LABEL : RECORD_LABEL;
    // busy, not disabled: a disabled button would lose the keyboard focus
    record.setAttribute("aria-disabled", String(next === "starting" || next === "transcribing"));
  }

  function listening() {
    const agent = page.agent(page.current());
    return agent && agent.voice && agent.voice.listen ? agent : null;
  }

  // -- the microphone -----------------------------------------------------------------------------
  function start() {
    const agent = listening();
    if (!agent) return;
    clearError();
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia || !window.MediaRecorder) {
      fail("This browser cannot record audio here (it needs a secure page: https, or localhost).");
      return;
    }
    setPhase("starting");
    say("Asking for the microphone…");
    navigator.mediaDevices.getUserMedia({ audio: true }).then(function (stream) {
      if (!listening()) { // the page moved to an agent that does not listen meanwhile
        stream.getTracks().forEach(function (track) { track.stop(); });
        setPhase("idle");
        say("");
        return;
      }
      const type = recordingType(function (t) { return MediaRecorder.isTypeSupported(t); });
      const recorder = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
      const chunks = [];
      let size = 0;
      let full = false; // stopped at a limit
      let over = false; // a chunk past the size limit was left out: so is everything after it
      let timer = null;
      recorder.addEventListener("dataavailable", function (e) {
        if (!e.data || !e.data.size || over) return;
        if (size + e.data.size > limits.maxAudioBytes) { full = over = true; finish(); return; }
        chunks.push(e.data);
        size += e.data.size;
      });
      recorder.addEventListener("stop", function () {
        clearTimeout(timer);
        stream.getTracks().forEach(function (track) { track.stop(); });
        finish = null;
        transcribe(agent.id, new Blob(chunks, { type: recorder.mimeType || type || "audio/webm" }), full);
      });
      finish = function () { if (recorder.state !== "inactive") recorder.stop(); };
      recorder.start(1000); // a chunk a second: the size limit is checked as the recording grows
      timer = setTimeout(function () { full = true; finish(); }, limits.maxAudioSeconds * 1000);
      setPhase("recording");
      say("Recording… press the microphone button again to stop.");
    }, function (error) {
      setPhase("idle");
      say("");
      fail(refusalMessage(error));
    });
  }

  function transcribe(agentId, blob, full) {
    if (!blob.size) {
      setPhase("idle");
      say("");
      fail("Nothing was recorded.");
      return;
    }
    setPhase("transcribing");
    say(full ? "The recording reached its limit. Transcribing…" : "Transcribing…");
    const form = new FormData();
    form.append("audio", blob, "recording." + extensionOf(blob.type));
    post(voiceUrl(agentId, "listen"), form).then(function (r) {
      return r.ok ? r.json() : refused(r);
    }).then(function (data) {
      insert(data.text || "");
      setPhase("idle");
      say(data.text ? "Transcribed into the message: edit it or send it." : "Nothing was heard.");
    }, function (error) {
      setPhase("idle");
      say("");
      fail(problemMessage(asProblem(error), "transcribe"));
    });
  }

  function insert(text) {
    const composer = page.composer;
    if (!text) return;
    const before = composer.value;
    composer.value = before + (before && !/\s$/.test(before) ? " " : "") + text;
    composer.dispatchEvent(new Event("input", { bubbles: true }));
    composer.focus();
    composer.setSelectionRange(composer.value.length, composer.value.length);
  }

  record.addEventListener("click", function () {
    if (phase === "idle") start();
    else if (phase === "recording" && finish) finish();
  });

  // -- Play ---------------------------------------------------------------------------------------
  function drawButton(button, state) {
    button.setAttribute("data-state", state);
    button.setAttribute("aria-busy", String(state === "loading"));
    button.setAttribute("aria-label", state === "idle" ? PLAY_LABEL : STOP_PLAYING_LABEL);
    button.lastChild.textContent = state === "idle" ? "Play" : state === "loading" ? "Loading…" : "Stop";
  }

  function stopPlaying(text) {
    const current = playing;
    if (!current) return;
    playing = null;
    current.controller.abort();
    audio.pause();
    if (current.url) URL.revokeObjectURL(current.url);
    drawButton(current.button, "idle");
    if (text !== undefined) say(text);
  }

  /* The audio of ``response`` into the element: appended as it arrives through a MediaSource when
   * the browser takes the type that way (MP3 in Chromium and Firefox), else as one Blob. */
  function load(response, current) {
    const type = (response.headers.get("Content-Type") || "").split(";")[0].trim();
    if (window.MediaSource && response.body && type && MediaSource.isTypeSupported(type)) {
      const source = new MediaSource();
      current.url = URL.createObjectURL(source);
      source.addEventListener("sourceopen", function () {
        const buffer = source.addSourceBuffer(type);
        const reader = response.body.getReader();
        function pump() {
          return reader.read().then(function (step) {
            if (current !== playing) return reader.cancel();
            if (step.done) {
              if (source.readyState === "open") source.endOfStream();
              return null;
            }
            return new Promise(function (resolve, reject) {
              buffer.addEventListener("updateend", resolve, { once: true });
              buffer.addEventListener("error", reject, { once: true });
              buffer.appendBuffer(step.value);
            }).then(pump);
          });
        }
        pump().catch(function () {
          if (current === playing) { stopPlaying(""); fail("The answer's audio stopped before its end."); }
        });
      }, { once: true });
      audio.src = current.url;
      return Promise.resolve();
    }
    return response.blob().then(function (blob) {
      if (current !== playing) return;
      current.url = URL.createObjectURL(blob);
      audio.src = current.url;
    });
  }

  function play(button, agentId, text) {
    if (playing && playing.button === button) { stopPlaying("Stopped."); return; }
    stopPlaying();
    clearError();
    const spoken = spokenText(text());
    if (!spoken) { fail("This answer has no text to play."); return; }
    const current = playing = { button: button, agentId: agentId, url: null, controller: new AbortController() };
    drawButton(button, "loading");
    say("Loading the answer's audio…");
    post(voiceUrl(agentId, "speak"), { text: spoken }, current.controller.signal).then(function (r) {
      return r.ok ? load(r, current) : refused(r);
    }).then(function () {
      return current === playing ? audio.play() : null;
    }).then(function () {
      if (current !== playing) return;
      drawButton(button, "playing");
      say("Playing the answer.");
    }, function (error) {
      if (current !== playing) return; // stopped meanwhile: its abort is no failure
      stopPlaying("");
      fail(error && error.name === "NotSupportedError"
        ? "This browser cannot play the answer's audio."
        : problemMessage(asProblem(error), "play the answer"));
    });
  }

  audio.addEventListener("ended", function () { stopPlaying("Finished playing."); });

  function turnControls(wrap, agentId, text) {
    const agent = page.agent(agentId);
    if (!agent || !agent.voice || !agent.voice.speak) return;
    const row = document.createElement("div");
    row.className = "voice-actions";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "speak-btn";
    const icon = document.createElement("span");
    icon.setAttribute("aria-hidden", "true");
    icon.className = "speak-icon";
    button.appendChild(icon);
    button.appendChild(document.createElement("span"));
    drawButton(button, "idle");
    button.addEventListener("click", function () { play(button, agentId, text); });
    row.appendChild(button);
    wrap.appendChild(row);
  }

  /* The microphone for the page's agent: shown when its voice listens; a recording in progress
   * ends (and is transcribed by the agent it was made for) when the agent changes. */
  function refresh() {
    const show = !!listening();
    if (!show && phase === "recording" && finish) finish();
    record.hidden = !show;
  }

  setPhase("idle");
  return {
    refresh: refresh,
    setLimits: function (value) { if (value) limits = value; },
    turnControls: turnControls
  };
}
