/* The transcript, the connection status and the running indicator, drawn from the thread's state
 * (state.js). The reducer never changes an object in place, so an item (or a part, a tool, an
 * approval) that is the same object as at the last render is left as it is: streaming a text part
 * redraws that part only, and an open tool card or a half-read transcript stays as it was.
 *
 * Safety: text from the server (messages, attributes, tool arguments and results) only ever
 * reaches the page through textContent, or through markdown.js (which does the same); never
 * through innerHTML.
 */
import { copyText, render as markdown } from "./markdown.js";
import { contentsText, json } from "./state.js";

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function attributeLine(attributes, skip) {
  const keys = Object.keys(attributes || {}).filter(function (k) { return skip.indexOf(k) < 0; });
  if (!keys.length) return null;
  return el("div", "attrs", keys.map(function (k) { return k + "=" + json(attributes[k]); }).join("  "));
}

/* One input as the page shows it, by kind: a user message (with its sender and platform when its
 * attributes name them), a notification card, a system reminder (hidden unless toggled), a state. */
function signalNode(sig) {
  const attrs = sig.attributes || {};
  const text = contentsText(sig.contents);
  let node;
  if (sig.type === "user") {
    const sender = attrs.sender || attrs.senderName || attrs.user || attrs.author;
    node = el("div", "msg msg-user");
    node.appendChild(el("div", "msg-label", sender ? String(sender) + (attrs.platform ? " · " + attrs.platform : "") : "You"));
    const body = el("div", "msg-body");
    body.appendChild(el("div", "plain", text));
    node.appendChild(body);
    const extra = attributeLine(attrs, ["sender", "senderName", "user", "author", "platform"]);
    if (extra) node.appendChild(extra);
  } else if (sig.type === "notification") {
    node = el("div", "card notification");
    const head = el("div", "card-head");
    head.appendChild(el("span", "card-kind", sig.tagName || "notification"));
    ["source", "kind", "priority"].forEach(function (k) {
      if (attrs[k] !== undefined && attrs[k] !== null) head.appendChild(el("span", "chip chip-" + k, attrs[k]));
    });
    node.appendChild(head);
    node.appendChild(el("div", "plain", text));
  } else if (sig.type === "reactive") {
    node = el("div", "reminder");
    node.appendChild(el("span", "reminder-tag", sig.tagName || "system-reminder"));
    node.appendChild(el("span", "plain", text));
  } else {
    node = el("div", "state-line");
    node.appendChild(el("span", "reminder-tag", sig.tagName || sig.type));
    node.appendChild(el("span", "plain", text));
  }
  node.setAttribute("data-signal-id", sig.id || "");
  node.setAttribute("data-kind", sig.type || "");
  return node;
}

/* The text an assistant turn has written so far (its text parts, as markdown). */
function turnText(item) {
  return (item ? item.parts : []).filter(function (p) { return p.kind === "text"; })
    .map(function (p) { return p.text; }).join("\n\n");
}

/* Keeps ``node`` right after ``prev`` (first in ``parent`` when prev is null); returns node. */
function place(parent, node, prev) {
  const want = prev ? prev.nextSibling : parent.firstChild;
  if (want !== node) parent.insertBefore(node, want);
  return node;
}

/* "1.2 s", "850 ms", "2 min 5 s" */
export function duration(ms) {
  if (typeof ms !== "number" || ms < 0) return "";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (Math.round(ms / 100) / 10).toFixed(1) + " s";
  const s = Math.round(ms / 1000);
  return Math.floor(s / 60) + " min " + (s % 60) + " s";
}

/* The line under an answer: "7 tokens (5 in, 2 out) · 1.2 s" from a run's figures (no tokens:
 * the duration alone). */
export function figuresLine(f) {
  const u = f.usage || {};
  const bits = [];
  const total = typeof u.totalTokens === "number" ? u.totalTokens : (u.inputTokens || 0) + (u.outputTokens || 0);
  if (total > 0) bits.push(total + " tokens (" + (u.inputTokens || 0) + " in, " + (u.outputTokens || 0) + " out)");
  const d = duration(f.durationMs);
  if (d) bits.push(d);
  return bits.join(" · ");
}

function modelsOf(f) {
  const seen = [];
  (f.models || []).forEach(function (m) { if (seen.indexOf(m) < 0) seen.push(m); });
  return seen.join(", ");
}

/* createRenderer(ui, actions) -> {render(state), follow()}. ``actions.decide(approval, approved)``
 * answers an approval card; ``actions.agentName(agentId)`` labels the assistant's turns (each with
 * the agent that answered); ``actions.retry(text)`` sends a failed run's input again;
 * ``actions.turnControls(node, agentId, text)`` (optional) adds an answer's buttons, ``text()``
 * being the answer's text when asked.
 * ``actions.agentInfo()`` is the page's agent ({name, description, examples}) for the empty
 * thread, whose example prompts go to the composer with ``actions.fill(text)``. */
export function createRenderer(ui, actions) {
  const items = new Map(); // item key -> {item, node, ...}
  const approvals = new Map(); // tool key -> {approval, node, yes, no}
  let epoch = null;
  let drawn = null;

  /* The transcript follows new content while the reader is at its bottom; scrolling up stops
   * that until they scroll back down (or send something). */
  let following = true;
  let lastTop = 0;
  function nearBottom() {
    const t = ui.transcript;
    return t.scrollHeight - t.scrollTop - t.clientHeight < 60;
  }
  ui.transcript.addEventListener("scroll", function () {
    // only the reader scrolls up (the page scrolls down, or the browser clamps at the bottom)
    const top = ui.transcript.scrollTop;
    if (nearBottom()) following = true;
    else if (top < lastTop) following = false;
    lastTop = top;
  });
  function scrollDown() { ui.transcript.scrollTop = ui.transcript.scrollHeight; }
  function followUp() { if (following) scrollDown(); }
  function follow() { following = true; scrollDown(); }

  // -- approvals ----------------------------------------------------------------------------------
  function approvalEntry(key, a) {
    let entry = approvals.get(key);
    if (!entry) {
      const node = el("div", "card approval");
      node.setAttribute("data-tool-call-id", a.toolCallId);
      node.appendChild(el("div", "card-head", "Approve " + a.toolName + "?"));
      node.appendChild(el("pre", "tool-args", json(a.args)));
      const row = el("div", "card-actions");
      const yes = el("button", "primary approve", "Approve");
      const no = el("button", "decline", "Decline");
      yes.type = no.type = "button";
      yes.addEventListener("click", function () { actions.decide(entry.approval, true); });
      no.addEventListener("click", function () { actions.decide(entry.approval, false); });
      row.appendChild(yes);
      row.appendChild(no);
      node.appendChild(row);
      entry = { approval: a, node: node, yes: yes, no: no };
      approvals.set(key, entry);
    }
    entry.approval = a;
    entry.yes.disabled = entry.no.disabled = a.deciding;
    return entry;
  }

  // -- turns --------------------------------------------------------------------------------------
  function toolNode(tool) {
    const node = el("details", "tool");
    node.setAttribute("data-tool-call-id", tool.toolCallId || "");
    if (tool.runId) node.setAttribute("data-tool-run-id", tool.runId);
    const summary = el("summary");
    summary.appendChild(el("span", "tool-icon", "tool"));
    summary.appendChild(el("span", "tool-name", tool.toolName));
    const status = el("span", "tool-status", "called");
    summary.appendChild(status);
    node.appendChild(summary);
    node.appendChild(el("div", "tool-h", "Arguments"));
    node.appendChild(el("pre", "tool-args", json(tool.args)));
    return { node: node, status: status, result: null };
  }

  function drawTool(entry, tool) {
    entry.status.textContent = tool.status;
    entry.node.classList.toggle("tool-failed", tool.status === "failed");
    if (tool.result && entry.result !== tool.result) {
      entry.node.appendChild(el("div", "tool-h", tool.result.isError ? "Error" : "Result"));
      entry.node.appendChild(el("pre", "tool-result", json(tool.result.value)));
      entry.result = tool.result;
    }
  }

  function partEntry(part, state) {
    if (part.kind === "tool") {
      const tool = state.tools[part.tool];
      const entry = toolNode(tool);
      entry.tool = null;
      return entry;
    }
    if (part.kind === "reasoning") {
      const node = el("details", "reasoning");
      node.appendChild(el("summary", null, "Reasoning"));
      const inner = el("div", "plain");
      node.appendChild(inner);
      return { node: node, inner: inner };
    }
    return { node: el("div", "md") };
  }

  function drawPart(entry, part, state) {
    if (part.kind === "tool") {
      const tool = state.tools[part.tool];
      if (tool && tool !== entry.tool) drawTool(entry, tool);
      entry.tool = tool;
    } else if (part !== entry.part) {
      if (part.kind === "reasoning") {
        entry.inner.textContent = part.text;
      } else {
        clear(entry.node);
        entry.node.appendChild(markdown(part.text));
      }
    }
    entry.part = part;
  }

  function turnEntry(item) {
    const wrap = el("div", "msg msg-assistant");
    const label = el("div", "msg-label", actions.agentName(item.agentId));
    wrap.appendChild(label);
    const body = el("div", "msg-body");
    wrap.appendChild(body);
    if (item.runId) wrap.setAttribute("data-run-id", item.runId);
    // under the answer: its figures (the model on hover) and a Copy button
    const foot = el("div", "turn-foot");
    const figures = el("span", "figures");
    const copy = el("button", "link-btn copy-answer", "Copy");
    copy.type = "button";
    copy.setAttribute("aria-label", "Copy the answer");
    copy.hidden = true;
    const entry = { node: wrap, body: body, label: label, foot: foot, figures: figures, copy: copy, parts: new Map(),
      notes: 0, item: null, shown: null };
    copy.addEventListener("click", function () {
      const texts = entry.item.parts.filter(function (p) { return p.kind === "text" && p.text; })
        .map(function (p) { return p.text; });
      copyText(texts.join("\n\n"), copy);
    });
    foot.appendChild(figures);
    foot.appendChild(copy);
    wrap.appendChild(foot);
    // the answer's own buttons (voice.js: Play), reading its text as it is when they are pressed
    if (actions.turnControls) actions.turnControls(wrap, item.agentId, function () { return turnText(entry.item); });
    return entry;
  }

  function drawFoot(entry, item) {
    entry.copy.hidden = !item.parts.some(function (p) { return p.kind === "text" && p.text; });
    if (item.figures !== entry.shown) {
      entry.shown = item.figures;
      const f = item.figures;
      entry.figures.textContent = f ? figuresLine(f) : "";
      const models = f ? modelsOf(f) : "";
      if (models) {
        entry.figures.title = "Model: " + models;
        entry.label.title = "Model: " + models;
        entry.figures.setAttribute("data-models", models);
      }
    }
    entry.foot.hidden = entry.copy.hidden && !entry.figures.textContent;
    if (entry.node.lastChild !== entry.foot) entry.node.appendChild(entry.foot); // last, below the notes
  }

  function drawTurn(entry, item, state) {
    let prev = null;
    const keep = new Set();
    item.parts.forEach(function (part) {
      let p = entry.parts.get(part.key);
      if (!p) {
        p = partEntry(part, state);
        entry.parts.set(part.key, p);
      }
      drawPart(p, part, state);
      prev = place(entry.body, p.node, prev);
      keep.add(part.key);
      const approval = part.kind === "tool" && state.approvals[part.tool];
      if (approval) prev = place(entry.body, approvalEntry(part.tool, approval).node, prev);
    });
    entry.parts.forEach(function (p, key) {
      if (!keep.has(key)) { p.node.remove(); entry.parts.delete(key); }
    });
    for (; entry.notes < item.notes.length; entry.notes += 1) {
      const note = item.notes[entry.notes];
      const line = el("div", "run-note " + (note.cls || ""), note.text);
      if (note.retry) {
        const again = el("button", "retry", "Retry");
        again.type = "button";
        again.setAttribute("aria-label", "Retry: send the message again");
        again.addEventListener("click", function () { again.disabled = true; actions.retry(note.retry); });
        line.appendChild(again);
      }
      entry.node.appendChild(line);
    }
    drawFoot(entry, item);
  }

  /* The empty thread: the agent's description, its example prompts (a click puts one in the
   * composer) and, when some are for the offline model, how its /tool lines work. */
  function emptyNode() {
    const info = actions.agentInfo ? actions.agentInfo() : null;
    const node = el("div", "empty-thread");
    node.appendChild(el("p", "empty", "Say hello to " + actions.agentName() + "."));
    if (!info) return node;
    if (info.description) node.appendChild(el("p", "agent-description", info.description));
    const examples = info.examples || [];
    if (examples.length) {
      node.appendChild(el("h2", "examples-head", "Try"));
      const list = el("ul", "examples");
      examples.forEach(function (text) {
        const li = el("li");
        const b = el("button", "example", text);
        b.type = "button";
        b.addEventListener("click", function () { actions.fill(text); });
        li.appendChild(b);
        list.appendChild(li);
      });
      node.appendChild(list);
    }
    if (examples.some(function (t) { return /^\s*\/tool\s/.test(t); })) {
      const hint = el("p", "tool-hint");
      hint.appendChild(document.createTextNode("With the offline model (local/echo) a line "));
      hint.appendChild(el("code", null, "/tool <name> <JSON arguments>"));
      hint.appendChild(document.createTextNode(" calls that tool, e.g. "));
      hint.appendChild(el("code", null, '/tool calculate {"expression": "6*7"}'));
      hint.appendChild(document.createTextNode("; the arguments may be left out for a tool that takes none."));
      node.appendChild(hint);
    }
    return node;
  }

  // -- items --------------------------------------------------------------------------------------
  /* "Show earlier messages": the older stored messages the snapshot left out, read on a click.
   * One button, updated in place (aria-disabled while loading), so that the keyboard's focus stays
   * on it from one batch to the next. */
  function earlierEntry() {
    const node = el("div", "earlier-line");
    const failed = el("span", "error-note");
    const more = el("button", "earlier");
    more.type = "button";
    more.addEventListener("click", function () { actions.loadEarlier(); });
    node.appendChild(failed);
    node.appendChild(more);
    return { node: node, failed: failed, more: more };
  }

  function drawEarlier(entry, item) {
    entry.failed.textContent = item.failed ? item.failed + " " : "";
    entry.more.textContent = item.loading ? "Loading earlier messages…" : "Show earlier messages";
    entry.more.setAttribute("aria-disabled", String(!!item.loading));
  }

  function itemEntry(item) {
    if (item.kind === "earlier") return earlierEntry();
    if (item.kind === "signal") return { node: signalNode(item.signal) };
    if (item.kind === "turn") return turnEntry(item);
    if (item.kind === "empty") return { node: emptyNode() };
    const node = el("div", "notice-line " + (item.cls || ""), item.text);
    node.setAttribute("role", "alert");
    return { node: node };
  }

  function drawTranscript(state) {
    const parent = ui.transcript;
    let prev = null;
    const keep = new Set();
    state.items.forEach(function (item) {
      let entry = items.get(item.key);
      if (entry && (entry.item.kind !== item.kind || (item.kind === "empty" && entry.item !== item))) {
        entry.node.remove();
        entry = null;
      }
      if (!entry) {
        entry = itemEntry(item);
        items.set(item.key, entry);
      }
      if (item.kind === "turn" && entry.item !== item) drawTurn(entry, item, state);
      if (item.kind === "earlier" && entry.item !== item) drawEarlier(entry, item);
      entry.item = item;
      prev = place(parent, entry.node, prev);
      keep.add(item.key);
    });
    items.forEach(function (entry, key) {
      if (!keep.has(key)) { entry.node.remove(); items.delete(key); }
    });
    // approvals whose tool card has not arrived: below everything
    Object.keys(state.approvals).forEach(function (key) {
      const approval = state.approvals[key];
      if (!approval.turn) prev = place(parent, approvalEntry(key, approval).node, prev);
    });
    approvals.forEach(function (entry, key) {
      if (!state.approvals[key]) { entry.node.remove(); approvals.delete(key); }
    });
  }

  /* The node of the first item drawn but the "Show earlier messages" line. */
  function firstHeld() {
    for (const entry of items.values()) if (entry.item.kind !== "earlier") return entry.node;
    return null;
  }

  function render(state) {
    if (state === drawn) return;
    const rebuilt = state.epoch !== epoch;
    if (!drawn || drawn.connection !== state.connection) {
      ui.status.setAttribute("data-state", state.connection.state);
      ui.status.textContent = state.connection.text;
    }
    if (!drawn || drawn.activeRunId !== state.activeRunId || drawn.runLabel !== state.runLabel) {
      ui.running.hidden = !state.activeRunId;
      ui.runningLabel.textContent = state.runLabel || "Running…";
      ui.app.classList.toggle("is-running", !!state.activeRunId);
      // streaming: assistive technology waits for the finished answer (announced by the page)
      ui.transcript.setAttribute("aria-busy", String(!!state.activeRunId && !state.runLabel));
    }
    if (!drawn || drawn.items !== state.items || drawn.approvals !== state.approvals || drawn.tools !== state.tools) {
      // earlier messages go in above the reader: what they were reading stays where it was
      const anchor = drawn && !rebuilt && drawn.earlier !== state.earlier ? firstHeld() : null;
      const top = anchor ? anchor.getBoundingClientRect().top : 0;
      drawTranscript(state);
      if (anchor && anchor.isConnected) ui.transcript.scrollTop += anchor.getBoundingClientRect().top - top;
    }
    drawn = state;
    epoch = state.epoch;
    if (rebuilt) follow();
    else followUp(); // new content, or the indicator took room from the transcript
  }

  return { render: render, follow: follow, followUp: followUp };
}
