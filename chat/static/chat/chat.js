/* The chat page: one websocket per open thread (/ws/agents/<agent>/threads/<thread>/), the
 * thread list, the notifications panel. No framework, no build step.
 *
 * Safety: text from the server (messages, attributes, tool arguments and results) only ever
 * reaches the page through textContent / createTextNode, or through SafeMarkdown (which does the
 * same); never through innerHTML.
 *
 * Resume: every thread chunk carries a seq; the page keeps the last one it applied (lastSeq),
 * drops anything at or below it, and reconnects with ?lastSeq=N, so a reconnect neither loses nor
 * repeats a chunk.
 */
(function () {
  "use strict";

  var $ = function (id) { return document.getElementById(id); };
  var ui = {
    app: $("app"), agent: $("agent-select"), status: $("conn-status"), transcript: $("transcript"),
    queue: $("queue"), queueList: $("queue-list"), running: $("running"), runningLabel: $("running-label"),
    stop: $("stop"), form: $("composer-form"), composer: $("composer"), send: $("send"), queueSend: $("queue-send"),
    threads: $("thread-list"), search: $("thread-search"), newThread: $("new-thread"), sidebar: $("sidebar"),
    menu: $("menu-toggle"), reminders: $("show-reminders"), notifToggle: $("notif-toggle"),
    notifCount: $("notif-count"), notifPanel: $("notif-panel"), notifList: $("notif-list"),
    notifPending: $("notif-pending"), notifClose: $("notif-close")
  };

  var state = {
    agents: [], agentId: null, threadId: null, socket: null, lastSeq: 0, resuming: false,
    activeRunId: null, retries: 0, retryTimer: null, closedForGood: false,
    runs: {}, parts: {}, tools: {}, seenSignals: {}, approvals: {}, queued: []
  };

  // -- small DOM helpers ---------------------------------------------------------------------
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function json(value) {
    try { return typeof value === "string" ? value : JSON.stringify(value, null, 2); }
    catch (e) { return String(value); }
  }
  function contentsText(contents) {
    if (typeof contents === "string") return contents;
    if (Array.isArray(contents)) {
      return contents.map(function (p) {
        return p && p.type === "text" ? p.text : "[" + ((p && p.type) || "part") + "]";
      }).join("\n");
    }
    return json(contents);
  }
  /* The transcript follows new content while the reader is at its bottom; scrolling up stops
   * that until they scroll back down (or send something). */
  var follow = true;
  function nearBottom() {
    var t = ui.transcript;
    return t.scrollHeight - t.scrollTop - t.clientHeight < 60;
  }
  var lastTop = 0;
  ui.transcript.addEventListener("scroll", function () {
    // only the reader scrolls up (the page scrolls down, or the browser clamps at the bottom)
    var top = ui.transcript.scrollTop;
    if (nearBottom()) follow = true;
    else if (top < lastTop) follow = false;
    lastTop = top;
  });
  function scrollDown() { ui.transcript.scrollTop = ui.transcript.scrollHeight; }
  function followUp() { if (follow) scrollDown(); }
  function append(node) {
    ui.transcript.appendChild(node);
    followUp();
    return node;
  }
  function keepBottom(fn) {
    fn();
    followUp();
  }
  function cookie(name) {
    var m = document.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)"));
    return m ? decodeURIComponent(m[1]) : "";
  }
  function api(method, url) {
    return fetch(url, {
      method: method, credentials: "same-origin",
      headers: method === "GET" ? {} : { "X-CSRFToken": cookie("csrftoken") }
    }).then(function (r) {
      if (r.status === 401) { window.location.href = "/login/?next=/"; throw new Error("signed out"); }
      return r.json();
    });
  }

  // -- rendering: messages and signals --------------------------------------------------------
  function bubble(role, label) {
    var wrap = el("div", "msg msg-" + role);
    if (label) wrap.appendChild(el("div", "msg-label", label));
    var body = el("div", "msg-body");
    wrap.appendChild(body);
    return { wrap: wrap, body: body };
  }

  function attributeLine(attributes, skip) {
    var keys = Object.keys(attributes || {}).filter(function (k) { return skip.indexOf(k) < 0; });
    if (!keys.length) return null;
    return el("div", "attrs", keys.map(function (k) { return k + "=" + json(attributes[k]); }).join("  "));
  }

  /* One input as the page shows it, by kind: a user message (with its sender and platform when its
   * attributes name them), a notification card, a system reminder (hidden unless toggled), a state. */
  function signalNode(sig) {
    var attrs = sig.attributes || {};
    var text = contentsText(sig.contents);
    var node;
    if (sig.type === "user") {
      var sender = attrs.sender || attrs.senderName || attrs.user || attrs.author;
      var label = sender ? String(sender) + (attrs.platform ? " · " + attrs.platform : "") : "You";
      var b = bubble("user", label);
      b.body.appendChild(el("div", "plain", text));
      var extra = attributeLine(attrs, ["sender", "senderName", "user", "author", "platform"]);
      if (extra) b.wrap.appendChild(extra);
      node = b.wrap;
    } else if (sig.type === "notification") {
      node = el("div", "card notification");
      var head = el("div", "card-head");
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

  /* An input echoed in run ``runId``: before the run's answer when the answer has not started
   * (the input that woke the run), else after it, and the run's next words go below it. */
  function showSignal(sig, runId) {
    if (sig.id && state.seenSignals[sig.id]) return;
    if (sig.id) state.seenSignals[sig.id] = true;
    var run = runId && state.runs[runId];
    if (run && !run.body.firstChild) {
      ui.transcript.insertBefore(signalNode(sig), run.wrap);
      followUp();
    } else {
      append(signalNode(sig));
      if (run) run.split = true;
    }
    if (sig.id) unqueue(sig.id);
    if (sig.type === "notification") loadNotifications();
  }

  function markdownInto(node, text) {
    clear(node);
    node.appendChild(window.SafeMarkdown.render(text));
  }

  function toolNode(callId, name, args) {
    var d = el("details", "tool");
    d.setAttribute("data-tool-call-id", callId || "");
    var s = el("summary");
    s.appendChild(el("span", "tool-icon", "tool"));
    s.appendChild(el("span", "tool-name", name || "tool"));
    var st = el("span", "tool-status", "called");
    s.appendChild(st);
    d.appendChild(s);
    d.appendChild(el("div", "tool-h", "Arguments"));
    d.appendChild(el("pre", "tool-args", json(args === undefined ? {} : args)));
    state.tools[callId] = { node: d, status: st };
    return d;
  }

  function toolResult(callId, name, result, isError) {
    var t = state.tools[callId];
    if (!t) {
      var holder = turnBody(null);
      holder.appendChild(toolNode(callId, name, undefined));
      t = state.tools[callId];
    }
    t.status.textContent = isError ? "failed" : "done";
    t.node.classList.toggle("tool-failed", !!isError);
    t.node.appendChild(el("div", "tool-h", isError ? "Error" : "Result"));
    t.node.appendChild(el("pre", "tool-result", json(result)));
    removeApproval(callId);
  }

  var standalone = null; // the assistant turn of stored messages being rendered
  function turnBody(runId) {
    if (runId && state.runs[runId] && !state.runs[runId].split) return state.runs[runId].body;
    if (!runId && standalone) return standalone;
    var b = bubble("assistant", agentName());
    append(b.wrap);
    if (runId) {
      b.wrap.setAttribute("data-run-id", runId);
      state.runs[runId] = { wrap: b.wrap, body: b.body };
    } else {
      standalone = b.body;
    }
    return b.body;
  }

  function renderMessage(m) {
    var meta = m.metadata || {};
    if (m.role === "user") {
      standalone = null;
      var sig = meta.signal || { id: m.id, type: "user", contents: m.content, attributes: {} };
      showSignal(sig);
      return;
    }
    if (m.role === "assistant") {
      var body = turnBody(null);
      var parts = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content || []);
      parts.forEach(function (p) {
        if (p.type === "text" && p.text) {
          var div = el("div", "md");
          markdownInto(div, p.text);
          body.appendChild(div);
        } else if (p.type === "reasoning") {
          var r = el("details", "reasoning");
          r.appendChild(el("summary", null, "Reasoning"));
          r.appendChild(el("div", "plain", p.text || ""));
          body.appendChild(r);
        } else if (p.type === "tool-call") {
          body.appendChild(toolNode(p.toolCallId, p.toolName, p.args !== undefined ? p.args : p.input));
        }
      });
      return;
    }
    if (m.role === "tool") {
      (m.content || []).forEach(function (p) {
        if (p.type === "tool-result") toolResult(p.toolCallId, p.toolName, p.result !== undefined ? p.result : p.output, p.isError);
      });
    }
  }

  function renderMessages(messages) {
    clear(ui.transcript);
    state.runs = {}; state.parts = {}; state.tools = {}; state.seenSignals = {}; state.approvals = {};
    standalone = null;
    messages.forEach(renderMessage);
    standalone = null;
    if (!messages.length) {
      ui.transcript.appendChild(el("p", "empty", "Say hello to " + agentName() + "."));
    }
    follow = true;
    scrollDown();
  }

  // -- rendering: live chunks -----------------------------------------------------------------
  function part(runId, id, kind) {
    var key = runId + ":" + kind + ":" + (id || "");
    var p = state.parts[key];
    if (!p) {
      var body = turnBody(runId);
      var node;
      if (kind === "reasoning") {
        node = el("details", "reasoning");
        node.appendChild(el("summary", null, "Reasoning"));
        var inner = el("div", "plain");
        node.appendChild(inner);
        body.appendChild(node);
        p = { node: inner, text: "", kind: kind };
      } else {
        node = el("div", "md");
        body.appendChild(node);
        p = { node: node, text: "", kind: kind };
      }
      state.parts[key] = p;
    }
    return p;
  }

  function runStatus(runId, text, cls) {
    var run = state.runs[runId];
    if (!run) return;
    var note = el("div", "run-note " + (cls || ""), text);
    run.wrap.appendChild(note);
  }

  function applyChunk(c) {
    var p = c.payload || {};
    var runId = c.runId;
    switch (c.type) {
      case "start":
        standalone = null;
        turnBody(runId);
        setActiveRun(runId);
        break;
      case "data-user-message":
      case "data-signal":
        showSignal(c.data || {}, runId);
        break;
      case "data-thread-snapshot":
        renderMessages((c.data && c.data.messages) || []);
        break;
      case "text-start":
        part(runId, p.id, "text");
        break;
      case "text-delta":
        keepBottom(function () {
          var t = part(runId, p.id, "text");
          t.text += p.text || "";
          markdownInto(t.node, t.text);
        });
        break;
      case "reasoning-start":
        part(runId, p.id, "reasoning");
        break;
      case "reasoning-delta":
        var r = part(runId, p.id, "reasoning");
        r.text += p.text || "";
        r.node.textContent = r.text;
        break;
      case "tool-call":
        if (!state.tools[p.toolCallId]) keepBottom(function () { turnBody(runId).appendChild(toolNode(p.toolCallId, p.toolName, p.args)); });
        break;
      case "tool-call-approval":
        if (!state.tools[p.toolCallId]) turnBody(runId).appendChild(toolNode(p.toolCallId, p.toolName, p.args));
        showApproval({ runId: runId, toolCallId: p.toolCallId, toolName: p.toolName, args: p.args });
        break;
      case "tool-call-suspended":
        runStatus(runId, "⏸ " + (p.toolName || "tool") + " is waiting", "muted");
        break;
      case "tool-result":
        keepBottom(function () { toolResult(p.toolCallId, p.toolName, p.result, p.isError); });
        break;
      case "tool-error":
        keepBottom(function () { toolResult(p.toolCallId, p.toolName, p.error, true); });
        break;
      case "finish":
        var reason = p.stepResult && p.stepResult.reason;
        if (reason === "suspended") {
          setActiveRun(runId, "Waiting for approval…");
        } else if (reason !== "tool-calls") {
          if (reason === "error") runStatus(runId, "The run failed.", "error-note");
          if (reason === "length") runStatus(runId, "Stopped at the length limit.", "muted");
          if (state.activeRunId === runId) setActiveRun(null);
          loadThreads();
        }
        break;
      case "abort":
        runStatus(runId, "■ Stopped", "muted");
        if (state.activeRunId === runId) setActiveRun(null);
        Object.keys(state.approvals).forEach(function (id) {
          if (state.approvals[id].runId === runId) removeApproval(id);
        });
        break;
      case "error":
        var err = (p.error && (p.error.message || p.error.code)) || "error";
        if (runId && state.runs[runId]) runStatus(runId, "⚠ " + err, "error-note");
        else notice(err, "error-note");
        break;
      case "tripwire":
        runStatus(runId, "⚠ " + (p.reason || "tripwire"), "error-note");
        break;
      default:
        break;
    }
  }

  function notice(text, cls) {
    append(el("div", "notice-line " + (cls || ""), text)).setAttribute("role", "alert");
  }

  // -- running indicator, queue, approvals ----------------------------------------------------
  function setActiveRun(runId, label) {
    state.activeRunId = runId;
    ui.running.hidden = !runId;
    ui.runningLabel.textContent = label || "Running…";
    ui.app.classList.toggle("is-running", !!runId);
    followUp(); // the indicator takes room from the transcript
  }

  function renderQueue() {
    clear(ui.queueList);
    state.queued.forEach(function (q) {
      var li = el("li", "queued-item");
      li.setAttribute("data-signal-id", q.id);
      li.appendChild(el("span", "queued-text", contentsText(q.contents)));
      var cancel = el("button", "link-btn", "Cancel");
      cancel.type = "button";
      cancel.addEventListener("click", function () { sendFrame({ type: "cancel-queued", signalId: q.id }); });
      li.appendChild(cancel);
      ui.queueList.appendChild(li);
    });
    ui.queue.hidden = state.queued.length === 0;
    followUp();
  }
  function unqueue(id) {
    var before = state.queued.length;
    state.queued = state.queued.filter(function (q) { return q.id !== id; });
    if (state.queued.length !== before) renderQueue();
  }

  function showApproval(a) {
    if (state.approvals[a.toolCallId]) return;
    var card = el("div", "card approval");
    card.setAttribute("data-tool-call-id", a.toolCallId);
    card.appendChild(el("div", "card-head", "Approve " + (a.toolName || "tool") + "?"));
    card.appendChild(el("pre", "tool-args", json(a.args === undefined ? {} : a.args)));
    var row = el("div", "card-actions");
    var yes = el("button", "primary approve", "Approve");
    var no = el("button", "decline", "Decline");
    yes.type = no.type = "button";
    function decide(approved) {
      yes.disabled = no.disabled = true;
      sendFrame({ type: "tool-approval", runId: a.runId, toolCallId: a.toolCallId, approved: approved });
    }
    yes.addEventListener("click", function () { decide(true); });
    no.addEventListener("click", function () { decide(false); });
    row.appendChild(yes); row.appendChild(no);
    card.appendChild(row);
    state.approvals[a.toolCallId] = { runId: a.runId, node: card };
    append(card);
  }
  function removeApproval(callId) {
    var a = state.approvals[callId];
    if (a) { a.node.remove(); delete state.approvals[callId]; }
  }

  // -- the socket -----------------------------------------------------------------------------
  function setStatus(s, text) {
    ui.status.setAttribute("data-state", s);
    ui.status.textContent = text;
  }

  function connect() {
    if (!state.agentId || !state.threadId) return;
    clearTimeout(state.retryTimer);
    var proto = location.protocol === "https:" ? "wss:" : "ws:";
    var url = proto + "//" + location.host + "/ws/agents/" + encodeURIComponent(state.agentId) + "/threads/" +
      encodeURIComponent(state.threadId) + "/";
    if (state.resuming) url += "?lastSeq=" + state.lastSeq;
    var socket = new WebSocket(url);
    state.socket = socket;
    setStatus("connecting", state.resuming ? "Reconnecting…" : "Connecting…");
    socket.onmessage = function (event) {
      if (socket !== state.socket) return;
      var frame;
      try { frame = JSON.parse(event.data); } catch (e) { return; }
      onFrame(frame);
    };
    socket.onclose = function (event) {
      if (socket !== state.socket) return;
      state.socket = null;
      if (event.code === 4401) { window.location.href = "/login/?next=/"; return; }
      if (event.code === 4404) {
        setStatus("offline", "Not found");
        notice("This thread does not exist for you, or the agent is unknown.", "error-note");
        return;
      }
      state.resuming = true;
      var delay = Math.min(10000, 500 * Math.pow(2, state.retries));
      state.retries += 1;
      setStatus("offline", "Offline — retrying");
      state.retryTimer = setTimeout(connect, delay);
    };
  }

  function onFrame(f) {
    if (f.type === "snapshot") {
      state.retries = 0;
      setStatus("connected", "Connected");
      if (!state.resuming) {
        renderMessages(f.messages || []);
      }
      state.lastSeq = f.lastSeq || 0;
      state.resuming = false;
      state.queued = f.queued || [];
      renderQueue();
      Object.keys(state.approvals).forEach(removeApproval);
      (f.approvals || []).forEach(showApproval);
      setActiveRun(f.activeRunId || null, (f.approvals || []).length ? "Waiting for approval…" : null);
      return;
    }
    if (typeof f.seq === "number") {
      if (f.seq <= state.lastSeq) return; // seen already (a replay overlapping what we hold)
      state.lastSeq = f.seq;
      applyChunk(f);
      return;
    }
    switch (f.type) {
      case "accepted":
        if (!ui.threads.querySelector(".thread-item.current")) loadThreads(); // a thread's first input
        if (f.action === "discard" || f.action === "blocked") notice("The message was not accepted (" + f.action + ").", "error-note");
        break;
      case "queue":
        state.queued = f.queued || [];
        renderQueue();
        break;
      case "error":
        notice("⚠ " + f.message + " (" + f.code + ")", "error-note");
        Object.keys(state.approvals).forEach(function (id) {
          state.approvals[id].node.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
        });
        break;
      case "abort-requested":
      case "pong":
        break;
      default:
        applyChunk(f); // a chunk without seq (a dropped subscriber's last word)
    }
  }

  function sendFrame(frame) {
    if (!state.socket || state.socket.readyState !== WebSocket.OPEN) {
      notice("Not connected — try again in a moment.", "error-note");
      return false;
    }
    state.socket.send(JSON.stringify(frame));
    return true;
  }

  function openThread(agentId, threadId) {
    if (state.socket) { var old = state.socket; state.socket = null; old.close(); }
    state.agentId = agentId;
    state.threadId = threadId;
    state.lastSeq = 0;
    state.resuming = false;
    state.retries = 0;
    state.queued = [];
    renderQueue();
    setActiveRun(null);
    clear(ui.transcript);
    var hash = "#/agents/" + encodeURIComponent(agentId) + "/threads/" + encodeURIComponent(threadId);
    if (location.hash !== hash) history.replaceState(null, "", hash);
    markThread();
    connect();
    ui.app.classList.remove("sidebar-open");
    ui.menu.setAttribute("aria-expanded", "false");
  }

  // -- threads, agents, notifications ---------------------------------------------------------
  function agentName() {
    var a = state.agents.filter(function (x) { return x.id === state.agentId; })[0];
    return a ? a.name : (state.agentId || "Agent");
  }

  var threadQuery = "";
  function loadThreads() {
    api("GET", "/chat/api/threads?q=" + encodeURIComponent(threadQuery)).then(function (data) {
      clear(ui.threads);
      (data.threads || []).forEach(function (t) {
        var li = el("li");
        var b = el("button", "thread-item");
        b.type = "button";
        b.setAttribute("data-thread-id", t.id);
        b.appendChild(el("span", "thread-title", t.title || t.preview || "Untitled"));
        b.appendChild(el("span", "thread-when", new Date(t.updatedAt).toLocaleString()));
        b.addEventListener("click", function () { openThread(state.agentId, t.id); });
        li.appendChild(b);
        ui.threads.appendChild(li);
      });
      if (!(data.threads || []).length) ui.threads.appendChild(el("li", "muted empty", threadQuery ? "No match" : "No threads yet"));
      markThread();
    }).catch(function () {});
  }
  function markThread() {
    ui.threads.querySelectorAll(".thread-item").forEach(function (b) {
      b.classList.toggle("current", b.getAttribute("data-thread-id") === state.threadId);
    });
  }

  function loadNotifications() {
    api("GET", "/chat/api/notifications").then(function (data) {
      var unread = data.unread || 0;
      ui.notifCount.hidden = unread === 0;
      ui.notifCount.textContent = String(unread);
      ui.notifPending.textContent = (data.pending || 0) + " pending";
      clear(ui.notifList);
      (data.records || []).forEach(function (r) {
        var li = el("li", "notif status-" + r.status);
        li.setAttribute("data-record-id", r.id);
        var head = el("div", "card-head");
        head.appendChild(el("span", "chip chip-priority", r.priority));
        head.appendChild(el("span", "notif-source", r.source + " · " + r.kind));
        head.appendChild(el("span", "muted notif-status", r.status));
        li.appendChild(head);
        li.appendChild(el("div", "plain", r.summary + (r.coalescedCount > 1 ? " (×" + r.coalescedCount + ")" : "")));
        var row = el("div", "card-actions");
        if (r.status === "pending" || r.status === "delivered") {
          var read = el("button", "link-btn notif-read", "Mark read");
          read.type = "button";
          read.addEventListener("click", function () { api("POST", "/chat/api/notifications/" + encodeURIComponent(r.id) + "/read").then(loadNotifications); });
          row.appendChild(read);
        }
        var dismiss = el("button", "link-btn notif-dismiss", "Dismiss");
        dismiss.type = "button";
        dismiss.addEventListener("click", function () { api("POST", "/chat/api/notifications/" + encodeURIComponent(r.id) + "/dismiss").then(loadNotifications); });
        row.appendChild(dismiss);
        li.appendChild(row);
        ui.notifList.appendChild(li);
      });
      if (!(data.records || []).length) ui.notifList.appendChild(el("li", "muted empty", "Nothing here"));
    }).catch(function () {});
  }

  function fromHash() {
    var m = /^#\/agents\/([^/]+)\/threads\/([^/]+)$/.exec(location.hash);
    return m ? { agent: decodeURIComponent(m[1]), thread: decodeURIComponent(m[2]) } : null;
  }

  function newThread() {
    return api("POST", "/chat/api/threads").then(function (t) { openThread(state.agentId, t.id); });
  }

  // -- input ----------------------------------------------------------------------------------
  function submit(type) {
    var text = ui.composer.value;
    if (!text.trim()) return;
    if (sendFrame({ type: type, message: text })) {
      ui.composer.value = "";
      follow = true;
      scrollDown();
      var empty = ui.transcript.querySelector(".empty");
      if (empty) empty.remove();
    }
  }

  ui.form.addEventListener("submit", function (e) { e.preventDefault(); submit("send-message"); });
  ui.queueSend.addEventListener("click", function () { submit("queue-message"); });
  ui.composer.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit("send-message"); }
  });
  function stop() { if (state.activeRunId) sendFrame({ type: "abort" }); }
  ui.stop.addEventListener("click", stop);
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") {
      if (!ui.notifPanel.hidden) { toggleNotifications(false); return; }
      stop();
    }
  });
  ui.agent.addEventListener("change", function () { openThread(ui.agent.value, state.threadId); });
  ui.newThread.addEventListener("click", newThread);
  var searchTimer = null;
  ui.search.addEventListener("input", function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { threadQuery = ui.search.value; loadThreads(); }, 200);
  });
  ui.menu.addEventListener("click", function () {
    var open = !ui.app.classList.contains("sidebar-open");
    ui.app.classList.toggle("sidebar-open", open);
    ui.menu.setAttribute("aria-expanded", String(open));
  });
  function toggleNotifications(open) {
    ui.notifPanel.hidden = !open;
    ui.notifToggle.setAttribute("aria-expanded", String(open));
    if (open) loadNotifications();
  }
  ui.notifToggle.addEventListener("click", function () { toggleNotifications(ui.notifPanel.hidden); });
  ui.notifClose.addEventListener("click", function () { toggleNotifications(false); });
  function reminders() {
    document.body.classList.toggle("show-reminders", ui.reminders.checked);
    followUp();
  }
  window.addEventListener("resize", followUp);
  ui.reminders.addEventListener("change", reminders);
  reminders();
  setInterval(function () { if (document.visibilityState === "visible") loadNotifications(); }, 15000);
  // a frame now and then keeps proxies from closing a quiet socket
  setInterval(function () {
    if (state.socket && state.socket.readyState === WebSocket.OPEN) state.socket.send(JSON.stringify({ type: "ping" }));
  }, 25000);

  // -- start ----------------------------------------------------------------------------------
  api("GET", "/chat/api/agents").then(function (data) {
    state.agents = data.agents || [];
    clear(ui.agent);
    state.agents.forEach(function (a) {
      var o = el("option", null, a.name);
      o.value = a.id;
      if (a.description) o.title = a.description;
      ui.agent.appendChild(o);
    });
    if (!state.agents.length) { notice("No agent with memory is configured.", "error-note"); return; }
    var where = fromHash();
    var agentId = where && state.agents.some(function (a) { return a.id === where.agent; }) ? where.agent : state.agents[0].id;
    ui.agent.value = agentId;
    state.agentId = agentId;
    loadThreads();
    loadNotifications();
    if (where) openThread(agentId, where.thread);
    else newThread();
  });
})();
