/* The thread's state as the page shows it, and the one function that changes it:
 * reduce(state, frame) -> a new state. Pure: no DOM, no globals, no clock; the state is plain data
 * (JSON-safe) and never changed in place, so the renderer can tell what changed by identity.
 *
 * Frames are the websocket's (docs/chat.md) plus the page's own events, whose types start with
 * "client-" (connecting, offline, a notice, a sent message, an approval decided, a thread reset).
 *
 * - seq: a chunk at or below lastSeq is a duplicate (a replay overlapping what the page holds) and
 *   changes nothing; a chunk past lastSeq + 1 is applied and the gap recorded in `gaps` (a run that
 *   took the thread over starts after the seqs its dead predecessor reserved; the server fills real
 *   losses from its event log before it sends).
 * - items: the transcript in order: signals (inputs), assistant turns (parts: text, reasoning, tool
 *   cards; notes under the turn), notices, the empty-thread line.
 * - tools: tool cards by toolKey(run id, tool-call id): a provider may reuse a tool-call id in
 *   another run. Stored messages carry no run id: their cards are scoped by their message, and a
 *   stored card still waiting for its result is taken over by the run whose chunk names its id
 *   (a run waiting for an approval is stored, and a page that joins gets its chunks again).
 * - approvals: by the same key; `turn` is the turn holding the tool card, or null while the card
 *   has not arrived (the approval shows anyway, and attaches when the card comes).
 * - figures: a run's tokens, duration and models (fetched by the page, `client-figures`), shown
 *   under the run's last turn (`turn.figures`); `turnRuns` names the run of each stored turn.
 * - earlier: the snapshot carries the newest messages only; when older ones are left out, `earlier`
 *   is {before: the id of the oldest message the page holds (null: none), loading, failed} and the
 *   first item is the "Show earlier messages" line; `client-earlier` puts the messages the page
 *   read (GET /chat/api/messages) before everything it holds.
 * - effects: what the page should do after this frame (reload the thread list, the notifications,
 *   fetch runs' figures, announce a finished answer); replaced by every call.
 */

import { budgetNoticeText, refusalCard } from "./limits.js";

export const WAITING_FOR_APPROVAL = "Waiting for approval…";
const KEEP_GAPS = 50;
const KEEP_ERRORS = 50;

export function initialState() {
  return {
    agentId: null, // the agent this page talks to: the label of turns whose agent is not stored
    lastSeq: 0,
    synced: false, // a snapshot arrived: the next connection resumes after lastSeq
    connection: { state: "offline", text: "Offline" },
    epoch: 0, // bumped whenever the transcript is rebuilt from messages
    nextKey: 1,
    items: [],
    runTurn: {}, // run id -> {turn, split}: the run's latest turn; split once an input came after it
    turnRuns: {}, // stored turn key -> the run that wrote it (content.metadata.runId)
    figures: {}, // run id -> {usage, durationMs, models, ...} as GET /chat/api/runs answers
    standalone: null, // the turn stored assistant messages (or a run-less tool result) go into
    parts: {}, // part key -> the key of the turn that holds it
    seenSignals: {},
    runs: {}, // run id -> {status: "running" | "suspended" | "finished" | "failed" | "aborted", reason}
    finishedRuns: [],
    activeRunId: null,
    runLabel: null,
    tools: {},
    approvals: {},
    queued: [],
    earlier: null, // {before, loading, failed} while older stored messages are not shown
    errors: [],
    gaps: [],
    effects: []
  };
}

export function toolKey(runId, toolCallId) {
  return JSON.stringify([runId, toolCallId]);
}

export function contentsText(contents) {
  if (typeof contents === "string") return contents;
  if (Array.isArray(contents)) {
    return contents.map(function (p) {
      return p && p.type === "text" ? p.text : "[" + ((p && p.type) || "part") + "]";
    }).join("\n");
  }
  return json(contents);
}

export function json(value) {
  try { return typeof value === "string" ? value : JSON.stringify(value, null, 2); }
  catch (e) { return String(value); }
}

const FRAME_TYPES = { snapshot: true, accepted: true, queue: true, "abort-requested": true, pong: true };

export function reduce(state, frame) {
  if (!frame || typeof frame !== "object") return settle(state);
  const type = frame.type;
  if (typeof type === "string" && type.indexOf("client-") === 0) return clientEvent(state, frame);
  if (type === "snapshot") return snapshot(state, frame);
  if (typeof frame.seq === "number") {
    if (frame.seq <= state.lastSeq) return settle(state); // seen already
    const s = draft(state);
    if (frame.seq > state.lastSeq + 1 && type !== "data-thread-snapshot") {
      s.gaps = state.gaps.concat([{ after: state.lastSeq, seq: frame.seq }]).slice(-KEEP_GAPS);
    }
    s.lastSeq = frame.seq;
    applyChunk(s, frame);
    return s;
  }
  if (type === "error" && !frame.payload) return errorFrame(state, frame);
  if (has(FRAME_TYPES, type)) return otherFrame(state, frame);
  const s = draft(state);
  applyChunk(s, frame); // a chunk without seq (a dropped subscriber's last word)
  return s;
}

// -- copy on write --------------------------------------------------------------------------------
function draft(state) {
  return Object.assign({}, state, { effects: [] });
}

function settle(state) {
  return state.effects.length ? Object.assign({}, state, { effects: [] }) : state;
}

/* s[field] with ``key`` set to ``value`` (removed when undefined), as a new object. A computed key
 * makes an own property whatever the key ("__proto__" included: signal ids are the sender's). */
function set(s, field, key, value) {
  const copy = value === undefined ? { ...s[field] } : { ...s[field], [key]: value };
  if (value === undefined) delete copy[key];
  s[field] = copy;
}

function has(map, key) {
  return Object.prototype.hasOwnProperty.call(map, key);
}

function newKey(s, prefix) {
  const key = prefix + s.nextKey;
  s.nextKey += 1;
  return key;
}

function itemIndex(s, key) {
  for (let i = s.items.length - 1; i >= 0; i -= 1) if (s.items[i].key === key) return i;
  return -1;
}

function pushItem(s, item) {
  s.items = s.items.concat([item]);
}

/* Replace the item ``key`` by fn(copy of it); the copy is a new object even when fn changes nothing
 * in it, so that the renderer redraws it (a tool or an approval of the turn changed). */
function updateItem(s, key, fn) {
  const i = itemIndex(s, key);
  if (i < 0) return;
  const copy = Object.assign({}, s.items[i]);
  fn(copy);
  s.items = s.items.slice();
  s.items[i] = copy;
}

function touchTurn(s, turnKey) {
  if (turnKey) updateItem(s, turnKey, function () {});
}

function notice(s, text, cls) {
  pushItem(s, { key: newKey(s, "notice:"), kind: "notice", text: text, cls: cls || "" });
}

function recordError(s, error) {
  s.errors = s.errors.concat([error]).slice(-KEEP_ERRORS);
}

// -- turns and parts ------------------------------------------------------------------------------
/* The turn a run's next part goes into: its latest one, or a new one at the end of the transcript
 * (the first, or the first after an input came in the middle of the run). Without a run: the
 * standalone turn. */
/* The turn a run's (or a stored answer's) parts go into; a stored answer of another agent than the
   turn before it starts a turn of its own, labelled with its agent. */
function turnFor(s, runId, agentId) {
  const agent = agentId || s.agentId || null;
  if (runId) {
    const current = s.runTurn[runId];
    if (current && !current.split) return current.turn;
  } else if (s.standalone) {
    const standing = s.items[itemIndex(s, s.standalone)];
    if (!agentId || (standing && standing.agentId === agentId)) return s.standalone;
  }
  const key = newKey(s, "turn:");
  pushItem(s, { key: key, kind: "turn", runId: runId || null, agentId: agent, parts: [], notes: [] });
  if (runId) set(s, "runTurn", runId, { turn: key, split: false });
  else s.standalone = key;
  return key;
}

function addPart(s, turnKey, part) {
  updateItem(s, turnKey, function (turn) { turn.parts = turn.parts.concat([part]); });
  set(s, "parts", part.key, turnKey);
}

function updatePart(s, partKey, fn) {
  const turnKey = s.parts[partKey];
  updateItem(s, turnKey, function (turn) {
    turn.parts = turn.parts.map(function (p) { return p.key === partKey ? fn(Object.assign({}, p)) : p; });
  });
}

/* A streamed text or reasoning part of a run, made on its first chunk. */
function livePart(s, runId, id, kind) {
  const key = runId + ":" + kind + ":" + (id || "");
  if (!s.parts[key]) addPart(s, turnFor(s, runId), { key: key, kind: kind, text: "" });
  return key;
}

function appendText(s, runId, id, kind, text) {
  const key = livePart(s, runId, id, kind);
  updatePart(s, key, function (p) { p.text += text || ""; return p; });
}

/* A model attempt failed and another one answers the step: the parts and tool calls it streamed go
   (``discarded``: their ids), so that the answer is not shown twice. */
function dropDiscarded(s, runId, ids) {
  (ids || []).forEach(function (id) {
    const keys = [runId + ":text:" + id, runId + ":reasoning:" + id];
    const tool = toolKey(runId, id);
    if (s.tools[tool]) {
      keys.push("tool:" + tool);
      set(s, "tools", tool, undefined);
    }
    keys.forEach(function (key) {
      const turnKey = s.parts[key];
      if (!turnKey) return;
      updateItem(s, turnKey, function (turn) {
        turn.parts = turn.parts.filter(function (p) { return p.key !== key; });
      });
      set(s, "parts", key, undefined);
    });
  });
}

function runNote(s, runId, text, cls, retry) {
  const current = runId && s.runTurn[runId];
  if (!current) return false;
  turnNote(s, current.turn, text, cls, retry);
  return true;
}

/* A note under a turn; a failed run's note offers to send its input again (``retry``: that text). */
function turnNote(s, turnKey, text, cls, retry) {
  const note = retry ? { text: text, cls: cls, retry: retry } : { text: text, cls: cls };
  updateItem(s, turnKey, function (turn) { turn.notes = turn.notes.concat([note]); });
}

/* What a failed turn would send again: the text of the last user message before it. */
function inputBefore(s, turnKey) {
  for (let i = itemIndex(s, turnKey) - 1; i >= 0; i -= 1) {
    const item = s.items[i];
    if (item.kind === "signal" && item.signal.type === "user") return contentsText(item.signal.contents) || null;
  }
  return null;
}

// -- tools and approvals --------------------------------------------------------------------------
function addTool(s, key, turnKey, runId, toolCallId, toolName, args) {
  set(s, "tools", key, {
    runId: runId, toolCallId: toolCallId, toolName: toolName || "tool",
    args: args === undefined ? {} : args, status: "called", result: null, turn: turnKey
  });
  addPart(s, turnKey, { key: "tool:" + key, kind: "tool", tool: key });
  const approval = s.approvals[key];
  if (approval) set(s, "approvals", key, Object.assign({}, approval, { turn: turnKey }));
}

function toolResult(s, key, makeTurn, runId, toolCallId, toolName, result, isError) {
  if (!s.tools[key]) addTool(s, key, makeTurn(), runId, toolCallId, toolName, undefined);
  const tool = s.tools[key];
  set(s, "tools", key, Object.assign({}, tool, {
    status: isError ? "failed" : "done", result: { value: result === undefined ? null : result, isError: !!isError }
  }));
  touchTurn(s, tool.turn);
  removeApproval(s, key);
}

/* The key of run ``runId``'s card for ``toolCallId``. A run that waits for an approval has its
 * messages stored already, and its chunks come again to a page that joins: its stored card (no run
 * id, no result yet) is that call's card, taken over under the run's key rather than drawn twice. A
 * stored card with its result is another run's call, whatever its id. */
function runToolKey(s, runId, toolCallId) {
  const key = toolKey(runId, toolCallId);
  if (!runId || s.tools[key]) return key;
  const stored = storedToolKey(s, toolCallId);
  if (!stored) return key;
  const tool = s.tools[stored];
  set(s, "tools", stored, undefined);
  set(s, "tools", key, Object.assign({}, tool, { runId: runId }));
  updateItem(s, tool.turn, function (turn) {
    turn.parts = turn.parts.map(function (p) {
      return p.tool === stored ? Object.assign({}, p, { tool: key }) : p;
    });
  });
  return key;
}

function showApproval(s, a) {
  const key = runToolKey(s, a.runId, a.toolCallId);
  if (s.approvals[key]) return;
  const tool = s.tools[key];
  set(s, "approvals", key, {
    runId: a.runId, toolCallId: a.toolCallId, toolName: a.toolName || "tool",
    args: a.args === undefined ? {} : a.args, deciding: false, turn: tool ? tool.turn : null
  });
  if (tool) touchTurn(s, tool.turn);
}

function removeApproval(s, key) {
  const approval = s.approvals[key];
  if (!approval) return;
  set(s, "approvals", key, undefined);
  touchTurn(s, approval.turn);
}

function setApprovals(s, fn) {
  Object.keys(s.approvals).forEach(function (key) {
    const approval = s.approvals[key];
    const next = fn(approval);
    if (next === approval) return;
    set(s, "approvals", key, next);
    touchTurn(s, approval.turn);
  });
}

// -- signals and the queue ------------------------------------------------------------------------
/* An input echoed in run ``runId``: before the run's turn while that turn is empty (the input that
 * woke the run), else at the end, and the run's next parts go into a new turn below it. */
function showSignal(s, sig, runId) {
  if (sig.id && has(s.seenSignals, sig.id)) return;
  if (sig.id) set(s, "seenSignals", sig.id, true);
  const item = { key: sig.id ? "signal:" + sig.id : newKey(s, "signal#"), kind: "signal", signal: sig };
  removeEmptyLine(s);
  const current = runId && s.runTurn[runId];
  const at = current ? itemIndex(s, current.turn) : -1;
  if (at >= 0 && s.items[at].parts.length === 0) {
    s.items = s.items.slice(0, at).concat([item], s.items.slice(at));
  } else {
    pushItem(s, item);
    if (current) set(s, "runTurn", runId, { turn: current.turn, split: true });
  }
  if (sig.id) unqueue(s, sig.id);
  if (sig.type === "notification") s.effects = s.effects.concat([{ type: "load-notifications" }]);
}

/* "Say hello to …" goes once something is said. */
function removeEmptyLine(s) {
  const i = itemIndex(s, "empty");
  if (i >= 0) s.items = s.items.slice(0, i).concat(s.items.slice(i + 1));
}

function unqueue(s, id) {
  const rest = s.queued.filter(function (q) { return q.id !== id; });
  if (rest.length !== s.queued.length) s.queued = rest;
}

// -- stored messages ------------------------------------------------------------------------------
function rebuild(s, messages, hasEarlier) {
  s.items = [];
  s.runTurn = {};
  s.turnRuns = {};
  s.parts = {};
  s.tools = {};
  s.seenSignals = {};
  s.approvals = {};
  s.standalone = null;
  s.epoch += 1;
  messages.forEach(function (m) { storedMessage(s, m); });
  s.standalone = null;
  if (!messages.length && !hasEarlier) pushItem(s, { key: "empty", kind: "empty" });
  setEarlier(s, hasEarlier ? earlierThan(messages) : null);
  loadStoredFigures(s);
}

/* The figures of the stored turns' runs: shown when the page has them, fetched when not. */
function loadStoredFigures(s) {
  const missing = [];
  Object.keys(s.turnRuns).forEach(function (key) {
    const run = s.turnRuns[key];
    if (has(s.figures, run)) {
      if (lastTurnOf(s, run) === key) updateItem(s, key, function (turn) { turn.figures = s.figures[run]; });
    } else if (missing.indexOf(run) < 0) missing.push(run);
  });
  if (missing.length) s.effects = s.effects.concat([{ type: "load-figures", runIds: missing }]);
}

/* What the page asks for next: the messages before the oldest of ``messages`` (none held: the newest). */
function earlierThan(messages) {
  return { before: messages.length ? messages[0].id : null, loading: false, failed: null };
}

/* The "Show earlier messages" line: first in the transcript while `earlier` is set. */
function setEarlier(s, earlier) {
  s.earlier = earlier;
  const rest = s.items.filter(function (item) { return item.kind !== "earlier"; });
  s.items = earlier ? [{ key: "earlier", kind: "earlier", loading: earlier.loading, failed: earlier.failed }].concat(rest) : rest;
}

/* Older stored messages the page read: their items go before everything the page holds (the live
   parts and the notices included); the turn stored answers go into stays the one it was. */
function prependStored(s, messages, hasEarlier) {
  const held = s.items.filter(function (item) { return item.kind !== "earlier" && item.kind !== "empty"; });
  const standalone = s.standalone;
  s.items = [];
  s.standalone = null;
  messages.forEach(function (m) { storedMessage(s, m); });
  s.standalone = standalone;
  s.items = s.items.concat(held);
  if (!s.items.length && !hasEarlier) pushItem(s, { key: "empty", kind: "empty" });
  setEarlier(s, hasEarlier && messages.length ? earlierThan(messages) : null); // none read: nothing more to ask
  loadStoredFigures(s);
}

/* A stored message, in Mastra's stored format ({format: 2, parts}) as the server sends them: a
   signal (role "signal", or a plain "user" message), or an assistant message whose tool invocations
   carry their results. System messages are not shown. */
function formatTwo(s, m) {
  const content = m.content;
  const parts = content.parts;
  if (m.role === "signal" || m.role === "user") {
    s.standalone = null;
    const meta = (content.metadata && content.metadata.signal) || {};
    const texts = parts.every(function (p) { return p.type === "text"; });
    const contents = texts ? parts.map(function (p) { return p.text; }).join("") : parts;
    const signal = { id: meta.id || m.id, type: meta.type || "user", contents: contents,
      attributes: meta.attributes || {} };
    if (meta.tagName && meta.tagName !== signal.type) signal.tagName = meta.tagName;
    showSignal(s, signal, null);
    return;
  }
  if (m.role !== "assistant") return;
  const meta = content.metadata || {};
  // another run's answer starts a turn of its own (its figures are its own)
  if (s.standalone && meta.runId && s.turnRuns[s.standalone] && s.turnRuns[s.standalone] !== meta.runId) {
    s.standalone = null;
  }
  const turnKey = turnFor(s, null, meta.agentId || null);
  if (meta.runId && !s.turnRuns[turnKey]) set(s, "turnRuns", turnKey, meta.runId);
  if (meta.notice) { // a soft budget's notice (limits.js)
    turnNote(s, turnKey, budgetNoticeText(meta.notice), "limit-notice");
    return;
  }
  const card = meta.error && refusalCard(meta.error.code, meta.error.message);
  if (card) { // a budget or limit refusal: a card of its own (limits.js)
    turnNote(s, turnKey, card.text, card.cls, card.retry ? inputBefore(s, turnKey) : undefined);
    s.standalone = null;
    return;
  }
  if (meta.error) { // a failed run's entry: why it failed, and a way to try again
    turnNote(s, turnKey, "⚠ " + (meta.error.message || meta.error.code || "The run failed."), "error-note",
      inputBefore(s, turnKey));
    s.standalone = null;
    return;
  }
  parts.forEach(function (p, i) {
    const key = "message:" + m.id + ":" + i;
    if (p.type === "text" && p.text) {
      addPart(s, turnKey, { key: key, kind: "text", text: p.text });
    } else if (p.type === "reasoning") {
      const text = p.reasoning || (p.details || []).map(function (d) { return d.text || ""; }).join("");
      addPart(s, turnKey, { key: key, kind: "reasoning", text: text });
    } else if (p.type === "tool-invocation" && p.toolInvocation) {
      const call = p.toolInvocation;
      const toolCard = toolKey("message:" + m.id, call.toolCallId);
      addTool(s, toolCard, turnKey, null, call.toolCallId, call.toolName, call.args);
      if (call.state === "result") {
        toolResult(s, toolCard, function () { return turnKey; }, null, call.toolCallId, call.toolName, call.result,
          call.isError);
      }
    }
  });
}

function storedMessage(s, m) {
  if (m.content && m.content.format === 2 && Array.isArray(m.content.parts)) formatTwo(s, m);
}

/* A stored result belongs to the latest stored card of its tool-call id still waiting for one. */
function storedToolKey(s, toolCallId) {
  const keys = Object.keys(s.tools);
  for (let i = keys.length - 1; i >= 0; i -= 1) {
    const tool = s.tools[keys[i]];
    if (tool.runId === null && tool.toolCallId === toolCallId && tool.status === "called") return keys[i];
  }
  return null;
}

// -- frames ---------------------------------------------------------------------------------------
function snapshot(state, f) {
  const s = draft(state);
  s.connection = { state: "connected", text: "Connected" };
  if (!state.synced) rebuild(s, f.messages || [], !!f.hasEarlier); // a resumed connection keeps what the page holds
  s.synced = true;
  s.lastSeq = f.lastSeq || 0;
  s.queued = f.queued || [];
  Object.keys(s.approvals).forEach(function (key) { removeApproval(s, key); });
  (f.approvals || []).forEach(function (a) { showApproval(s, a); });
  s.activeRunId = f.activeRunId || null;
  s.runLabel = s.activeRunId && (f.approvals || []).length ? WAITING_FOR_APPROVAL : null;
  return s;
}

function endRun(s, runId, status, reason) {
  set(s, "runs", runId, { status: status, reason: reason });
  if (s.finishedRuns.indexOf(runId) < 0) s.finishedRuns = s.finishedRuns.concat([runId]);
  if (s.activeRunId === runId) {
    s.activeRunId = null;
    s.runLabel = null;
  }
}

function applyChunk(s, c) {
  const p = c.payload || {};
  const runId = c.runId || null;
  const makeTurn = function () { return turnFor(s, runId); };
  switch (c.type) {
    case "start":
      s.standalone = null;
      turnFor(s, runId);
      if (runId) set(s, "runs", runId, { status: "running", reason: null });
      s.activeRunId = runId;
      s.runLabel = null;
      break;
    case "data-user-message":
    case "data-signal":
      showSignal(s, c.data || {}, runId);
      break;
    case "data-budget-notice":
      if (!runNote(s, runId, budgetNoticeText(c.data), "limit-notice")) notice(s, budgetNoticeText(c.data), "limit-notice");
      break;
    case "data-model-retry":
      dropDiscarded(s, runId, c.data && c.data.discarded);
      break;
    case "data-thread-snapshot":
      rebuild(s, (c.data && c.data.messages) || [], !!(c.data && c.data.hasEarlier));
      break;
    case "text-start":
      livePart(s, runId, p.id, "text");
      break;
    case "text-delta":
      appendText(s, runId, p.id, "text", p.text);
      break;
    case "reasoning-start":
      livePart(s, runId, p.id, "reasoning");
      break;
    case "reasoning-delta":
      appendText(s, runId, p.id, "reasoning", p.text);
      break;
    case "tool-call":
    case "tool-call-approval": {
      const key = runToolKey(s, runId, p.toolCallId);
      if (!s.tools[key]) addTool(s, key, makeTurn(), runId, p.toolCallId, p.toolName, p.args);
      if (c.type === "tool-call-approval") {
        showApproval(s, { runId: runId, toolCallId: p.toolCallId, toolName: p.toolName, args: p.args });
      }
      break;
    }
    case "tool-call-suspended":
      runNote(s, runId, "⏸ " + (p.toolName || "tool") + " is waiting", "muted");
      break;
    case "tool-result":
      toolResult(s, runToolKey(s, runId, p.toolCallId), makeTurn, runId, p.toolCallId, p.toolName, p.result, p.isError);
      break;
    case "tool-error":
      toolResult(s, runToolKey(s, runId, p.toolCallId), makeTurn, runId, p.toolCallId, p.toolName, p.error, true);
      break;
    case "finish": {
      const reason = (p.stepResult && p.stepResult.reason) || null;
      if (reason === "suspended") {
        if (runId) set(s, "runs", runId, { status: "suspended", reason: reason });
        s.activeRunId = runId;
        s.runLabel = WAITING_FOR_APPROVAL;
      } else if (reason !== "tool-calls") {
        // a refused run has its card (limits.js): no retry of a call its budget refuses
        const refused = s.errors.some(function (e) { return e.runId === runId && refusalCard(e.code); });
        if (reason === "error" && runId && s.runTurn[runId] && !refused) {
          runNote(s, runId, "The run failed.", "error-note", inputBefore(s, s.runTurn[runId].turn));
        }
        if (reason === "length") runNote(s, runId, "Stopped at the length limit.", "muted");
        if (runId) endRun(s, runId, reason === "error" ? "failed" : "finished", reason);
        s.effects = s.effects.concat([{ type: "load-threads" }]);
        if (runId) s.effects = s.effects.concat([{ type: "run-finished", runId: runId }]);
      }
      break;
    }
    case "abort":
      runNote(s, runId, "■ Stopped", "muted");
      if (runId) endRun(s, runId, "aborted", (p && p.reason) || null);
      Object.keys(s.approvals).forEach(function (key) {
        if (s.approvals[key].runId === runId) removeApproval(s, key);
      });
      break;
    case "error": {
      const err = (p.error && (p.error.message || p.error.code)) || "error";
      recordError(s, { runId: runId, code: (p.error && p.error.code) || null, message: err });
      const card = refusalCard(p.error && p.error.code, p.error && p.error.message);
      if (card) { // a budget or limit refusal (limits.js)
        const retry = card.retry && runId && s.runTurn[runId] ? inputBefore(s, s.runTurn[runId].turn) : undefined;
        if (!runNote(s, runId, card.text, card.cls, retry)) notice(s, card.text, card.cls);
        break;
      }
      if (!runNote(s, runId, "⚠ " + err, "error-note")) notice(s, err, "error-note");
      break;
    }
    case "tripwire":
      runNote(s, runId, "⚠ " + (p.reason || "tripwire"), "error-note");
      break;
    default:
      break;
  }
}

function errorFrame(state, f) {
  const s = draft(state);
  notice(s, "⚠ " + f.message + " (" + f.code + ")", "error-note");
  recordError(s, { runId: null, code: f.code || null, message: f.message || "" });
  // a refused message goes back to the composer, not lost
  if (f.frame === "send-message" || f.frame === "queue-message") s.effects = [{ type: "refused" }];
  // the decision the server refused may be made again
  setApprovals(s, function (a) { return a.deciding ? Object.assign({}, a, { deciding: false }) : a; });
  return s;
}

function otherFrame(state, f) {
  const s = draft(state);
  if (f.type === "accepted") {
    s.effects = [{ type: "accepted" }]; // a thread's first input makes it a listed thread
    if (f.action === "discard" || f.action === "blocked") {
      notice(s, "The message was not accepted (" + f.action + ").", "error-note");
    }
    return s;
  }
  if (f.type === "queue") {
    s.queued = f.queued || [];
    return s;
  }
  return settle(state); // abort-requested, pong
}

/* The key of run ``runId``'s last turn (live: its run id; stored: turnRuns), or null. */
function lastTurnOf(s, runId) {
  for (let i = s.items.length - 1; i >= 0; i -= 1) {
    const item = s.items[i];
    if (item.kind === "turn" && (item.runId === runId || s.turnRuns[item.key] === runId)) return item.key;
  }
  return null;
}

/* The text of run ``runId``'s answer (its turns' text parts), for announcing it once it is done. */
export function answerText(state, runId) {
  const texts = [];
  state.items.forEach(function (item) {
    if (item.kind !== "turn" || (item.runId !== runId && state.turnRuns[item.key] !== runId)) return;
    item.parts.forEach(function (p) { if (p.kind === "text" && p.text) texts.push(p.text); });
  });
  return texts.join("\n\n");
}

// -- the page's own events ------------------------------------------------------------------------
function clientEvent(state, e) {
  const s = draft(state);
  switch (e.type) {
    case "client-reset": { // another thread opens: nothing of this one stays
      const fresh = initialState();
      fresh.agentId = e.agentId || null;
      fresh.nextKey = state.nextKey;
      fresh.epoch = state.epoch + 1;
      return fresh;
    }
    case "client-connecting":
      s.connection = { state: "connecting", text: e.resuming ? "Reconnecting…" : "Connecting…" };
      return s;
    case "client-offline":
      s.connection = { state: "offline", text: "Offline — retrying" };
      return s;
    case "client-not-found":
      s.connection = { state: "offline", text: "Not found" };
      notice(s, "This thread does not exist for you, or the agent is unknown.", "error-note");
      return s;
    case "client-notice":
      notice(s, e.text, e.cls);
      return s;
    case "client-sent":
      removeEmptyLine(s);
      return s;
    case "client-figures": // runs' figures arrived: under each run's last turn
      (e.runs || []).forEach(function (f) {
        if (!f || !f.id) return;
        set(s, "figures", f.id, f);
        const key = lastTurnOf(s, f.id);
        if (key) updateItem(s, key, function (turn) { turn.figures = f; });
      });
      return s;
    case "client-earlier-loading": // the page asked for the messages before e.before
      if (!s.earlier || s.earlier.before !== e.before) return settle(state);
      setEarlier(s, { before: s.earlier.before, loading: true, failed: null });
      return s;
    case "client-earlier": // they arrived (ignored when the transcript changed meanwhile)
      if (!s.earlier || s.earlier.before !== e.before) return settle(state);
      prependStored(s, e.messages || [], !!e.hasEarlier);
      return s;
    case "client-earlier-failed":
      if (!s.earlier || s.earlier.before !== e.before) return settle(state);
      setEarlier(s, { before: s.earlier.before, loading: false, failed: e.text || "Could not load them." });
      return s;
    case "client-approval-sent": {
      const key = toolKey(e.runId, e.toolCallId);
      const approval = s.approvals[key];
      if (approval) {
        set(s, "approvals", key, Object.assign({}, approval, { deciding: true }));
        touchTurn(s, approval.turn);
      }
      return s;
    }
    default:
      return settle(state);
  }
}
