/* The chat page's entry module: it wires the thread's state (state.js) to the socket (socket.js),
 * the transcript (render.js) and the panels (panels.js), and binds the keys and buttons.
 *
 * Every change of the thread goes through dispatch(frame): reduce, then draw, then the effects the
 * new state asks for (reload the thread list, the notifications). No framework, no build step.
 */
import { api, signIn } from "./api.js";
import { notifications, queuePanel, threadList } from "./panels.js";
import { clear, createRenderer, el } from "./render.js";
import { openThreadSocket } from "./socket.js";
import { answerText, initialState, reduce } from "./state.js";
import { createVoice } from "./voice.js";

const $ = function (id) { return document.getElementById(id); };
const ui = {
  app: $("app"), agent: $("agent-select"), status: $("conn-status"), transcript: $("transcript"),
  queue: $("queue"), queueList: $("queue-list"), running: $("running"), runningLabel: $("running-label"),
  stop: $("stop"), form: $("composer-form"), composer: $("composer"), send: $("send"), queueSend: $("queue-send"),
  threads: $("thread-list"), search: $("thread-search"), newThread: $("new-thread"), sidebar: $("sidebar"),
  menu: $("menu-toggle"), reminders: $("show-reminders"), notifToggle: $("notif-toggle"),
  notifCount: $("notif-count"), notifPanel: $("notif-panel"), notifList: $("notif-list"),
  notifPending: $("notif-pending"), notifClose: $("notif-close"), notifReadAll: $("notif-read-all"),
  notifTest: $("notif-test"), announcer: $("announcer")
};
const narrow = window.matchMedia("(max-width: 720px)");

let state = initialState();
let agents = [];
let agentId = null;
let threadId = null;
let socket = null;
let unanswered = []; // texts sent and not yet accepted or refused, oldest first

function agentOf(id) {
  return agents.filter(function (x) { return x.id === id; })[0] || null;
}

/* The name of agent ``id`` (the page's agent when none is stored for a turn). */
function agentName(id) {
  const wanted = id || agentId;
  const a = agentOf(wanted);
  return a ? a.name : (wanted || "Agent");
}

// the microphone and the answers' Play buttons, for agents with a voice (voice.js)
const voice = createVoice({
  agent: function (id) { return agents.filter(function (x) { return x.id === id; })[0] || null; },
  current: function () { return agentId; },
  composer: ui.composer
});

const renderer = createRenderer(ui, {
  agentName: agentName,
  turnControls: voice.turnControls,
  agentInfo: function () { return agentOf(agentId); },
  fill: function (text) { ui.composer.value = text; ui.composer.focus(); },
  retry: function (text) {
    if (sendFrame({ type: "send-message", message: text })) {
      unanswered.push(text);
      dispatch({ type: "client-sent" });
    }
  },
  loadEarlier: loadEarlier,
  decide: function (approval, approved) {
    if (sendFrame({ type: "tool-approval", runId: approval.runId, toolCallId: approval.toolCallId, approved: approved })) {
      dispatch({ type: "client-approval-sent", runId: approval.runId, toolCallId: approval.toolCallId });
    }
  }
});
const threads = threadList(ui, {
  open: function (id) { openThread(agentId, id); },
  current: function () { return threadId; },
  deleted: function (id) { if (id === threadId) newThread(); }
});
const notifs = notifications(ui, {
  where: function () { return { agentId: agentId, threadId: threadId }; }
});
const drawQueue = queuePanel(ui, {
  cancel: function (signalId) { sendFrame({ type: "cancel-queued", signalId: signalId }); }
});

function dispatch(frame) {
  const next = reduce(state, frame);
  if (next === state) return;
  state = next;
  renderer.render(state);
  if (drawQueue(state.queued)) renderer.followUp();
  state.effects.forEach(function (effect) {
    if (effect.type === "load-threads") threads.load();
    else if (effect.type === "load-notifications") notifs.load();
    else if (effect.type === "load-figures") loadFigures(effect.runIds);
    else if (effect.type === "run-finished") {
      loadFigures([effect.runId]);
      announce(effect.runId);
    }
    else if (effect.type === "accepted") {
      unanswered.shift();
      if (!threads.listed()) threads.load();
    } else if (effect.type === "refused") {
      const text = unanswered.shift();
      if (text && !ui.composer.value) ui.composer.value = text;
    }
  });
}

/* Runs' figures (tokens, duration, models) for the line under their answers. */
function loadFigures(runIds) {
  const ids = (runIds || []).slice(0, 100);
  if (!ids.length) return;
  const epoch = state.epoch;
  const query = ids.map(function (id) { return "id=" + encodeURIComponent(id); }).join("&");
  api("GET", "/chat/api/runs?" + query).then(function (data) {
    if (state.epoch === epoch) dispatch({ type: "client-figures", runs: data.runs || [] });
  }).catch(function () {});
}

/* The stored messages before the oldest one the page shows (the snapshot carries the newest). */
function loadEarlier() {
  const earlier = state.earlier;
  if (!earlier || earlier.loading) return;
  const thread = threadId;
  const before = earlier.before;
  dispatch({ type: "client-earlier-loading", before: before });
  const query = "threadId=" + encodeURIComponent(thread) + (before === null ? "" : "&before=" + encodeURIComponent(before));
  api("GET", "/chat/api/messages?" + query).then(function (data) {
    if (threadId === thread) dispatch({ type: "client-earlier", before: before, messages: data.messages || [], hasEarlier: !!data.hasEarlier });
  }).catch(function (error) {
    if (threadId === thread) dispatch({ type: "client-earlier-failed", before: before, text: error.message });
  });
}

/* A finished answer is read out once (the transcript itself is aria-busy while it streams). */
function announce(runId) {
  const text = answerText(state, runId);
  if (!text) return;
  ui.announcer.textContent = "";
  const cut = text.length > 600 ? text.slice(0, 600) + "…" : text;
  window.setTimeout(function () { ui.announcer.textContent = agentName(null) + " answered: " + cut; }, 50);
}

function notice(text) {
  dispatch({ type: "client-notice", text: text, cls: "error-note" });
}

function sendFrame(frame) {
  if (socket && socket.send(frame)) return true;
  notice("Not connected — try again in a moment.");
  return false;
}

function openThread(agent, thread) {
  if (socket) socket.close();
  agentId = agent;
  threadId = thread;
  unanswered = [];
  dispatch({ type: "client-reset", agentId: agent });
  const hash = "#/agents/" + encodeURIComponent(agent) + "/threads/" + encodeURIComponent(thread);
  if (location.hash !== hash) history.replaceState(null, "", hash);
  threads.mark();
  voice.refresh();
  socket = openThreadSocket({
    agentId: agent,
    threadId: thread,
    resumeSeq: function () { return state.synced ? state.lastSeq : null; },
    onFrame: dispatch,
    onConnecting: function (resuming) { dispatch({ type: "client-connecting", resuming: resuming }); },
    onOffline: function () { dispatch({ type: "client-offline" }); },
    onFinal: function (reason) {
      if (reason === "signed-out") signIn();
      else dispatch({ type: "client-not-found" });
    }
  });
  drawer(false);
}

/* The thread list: a drawer on narrow screens, out of the tab order (inert) while closed. */
function drawer(open) {
  ui.app.classList.toggle("sidebar-open", open);
  ui.menu.setAttribute("aria-expanded", String(open));
  ui.sidebar.inert = narrow.matches && !open;
  if (open) ui.newThread.focus();
}

function fromHash() {
  // the thread id is percent-encoded by the page; a pasted link may hold its slashes as they are
  const m = /^#\/agents\/([^/]+)\/threads\/(.+)$/.exec(location.hash);
  return m ? { agent: decodeURIComponent(m[1]), thread: decodeURIComponent(m[2]) } : null;
}

function newThread() {
  return api("POST", "/chat/api/threads").then(function (t) { openThread(agentId, t.id); });
}

// -- input ----------------------------------------------------------------------------------------
function submit(type) {
  const text = ui.composer.value;
  if (!text.trim()) return;
  if (sendFrame({ type: type, message: text })) {
    unanswered.push(text);
    ui.composer.value = "";
    dispatch({ type: "client-sent" });
    renderer.follow();
  }
}

function stop() {
  if (state.activeRunId) sendFrame({ type: "abort" });
}

ui.form.addEventListener("submit", function (e) { e.preventDefault(); submit("send-message"); });
ui.queueSend.addEventListener("click", function () { submit("queue-message"); });
ui.composer.addEventListener("keydown", function (e) {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit("send-message"); }
});
// the page serves both buttons disabled (Send's native submit would reload it): they work from here
ui.send.disabled = false;
ui.queueSend.disabled = false;
ui.stop.addEventListener("click", stop);
document.addEventListener("keydown", function (e) {
  if (e.key === "Escape") {
    if (notifs.isOpen()) { notifs.toggle(false); ui.notifToggle.focus(); return; }
    if (narrow.matches && ui.app.classList.contains("sidebar-open")) { drawer(false); ui.menu.focus(); return; }
    stop();
  }
});
ui.agent.addEventListener("change", function () { openThread(ui.agent.value, threadId); });
ui.newThread.addEventListener("click", newThread);
ui.menu.addEventListener("click", function () { drawer(!ui.app.classList.contains("sidebar-open")); });
narrow.addEventListener("change", function () { drawer(false); });
// a link to a thread (a notification's): open it here
window.addEventListener("hashchange", function () {
  const where = fromHash();
  if (!where || !agentOf(where.agent) || !agentOf(where.agent).available) return;
  if (where.agent === agentId && where.thread === threadId) return;
  ui.agent.value = where.agent;
  notifs.toggle(false);
  openThread(where.agent, where.thread);
});
function reminders() {
  document.body.classList.toggle("show-reminders", ui.reminders.checked);
  renderer.followUp();
}
window.addEventListener("resize", renderer.followUp);
ui.reminders.addEventListener("change", reminders);
reminders();
setInterval(function () { if (document.visibilityState === "visible") notifs.load(); }, 15000);

// -- start ----------------------------------------------------------------------------------------
api("GET", "/chat/api/agents").then(function (data) {
  agents = data.agents || [];
  voice.setLimits(data.voiceLimits);
  clear(ui.agent);
  // every agent is listed; one the page cannot talk to says why (an agent without memory)
  agents.forEach(function (a) {
    const o = el("option", null, a.available ? a.name : a.name + " (" + a.reason + ")");
    o.value = a.id;
    o.disabled = !a.available;
    if (a.description) o.title = a.description;
    ui.agent.appendChild(o);
  });
  const usable = agents.filter(function (a) { return a.available; });
  drawer(false);
  if (!usable.length) { notice("No agent with memory is configured."); return; }
  const where = fromHash();
  const agent = where && usable.some(function (a) { return a.id === where.agent; }) ? where.agent : usable[0].id;
  ui.agent.value = agent;
  agentId = agent;
  threads.load();
  notifs.load();
  if (where) openThread(agent, where.thread);
  else newThread();
});
