// The chat page's thread-state reducer (chat/static/chat/state.js): frames in, exact states out.
// No DOM, no npm install: `node --test tests/js/chat_state.test.mjs` (tests/js/test_chat_state.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import { answerText, initialState, reduce, toolKey, WAITING_FOR_APPROVAL } from "../../chat/static/chat/state.js";

function deepFreeze(value) {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    Object.values(value).forEach(deepFreeze);
  }
  return value;
}

/* Every frame through reduce, on frozen states and frames: a reducer that changed its input in
 * place would throw here. */
function run(state, frames) {
  return frames.reduce((s, f) => reduce(deepFreeze(s), deepFreeze(f)), state);
}

function chunk(seq, type, runId, payload = {}, extra = {}) {
  return { type, runId, from: "AGENT", payload, seq, ...extra };
}

function snapshot(lastSeq, { messages = [], queued = [], approvals = [], activeRunId = null, hasEarlier = false } = {}) {
  return { type: "snapshot", messages, hasEarlier, queued, approvals, activeRunId, lastSeq };
}

/* Stored messages as the server sends them: Mastra's stored format ({format: 2, parts}). */
function said(id, text, signal = {}) {
  return { id, role: "signal", type: "user", content: { format: 2, parts: [{ type: "text", text }],
    metadata: { signal: { id, type: "user", tagName: "user", createdAt: "2026-12-01T00:00:00Z", ...signal } } } };
}

function answered(id, parts) {
  return { id, role: "assistant", content: { format: 2, parts } };
}

function invocation(toolCallId, toolName, args, result) {
  const call = { state: result === undefined ? "call" : "result", toolCallId, toolName, args };
  return { type: "tool-invocation", toolInvocation: result === undefined ? call : { ...call, result } };
}

const CONNECTED = { state: "connected", text: "Connected" };
const HI = { id: "s1", type: "user", tagName: "user", contents: "hi" };

function expected(fields) {
  return { ...initialState(), ...fields };
}

test("a fresh thread: the snapshot's messages, or the empty line", () => {
  const empty = run(initialState(), [snapshot(0)]);
  assert.deepEqual(empty, expected({
    synced: true, connection: CONNECTED, epoch: 1, items: [{ key: "empty", kind: "empty" }]
  }));

  const stored = run(initialState(), [snapshot(7, { messages: [
    said("m1", "hi"),
    answered("m2", [{ type: "reasoning", reasoning: "think", details: [{ type: "text", text: "think" }] },
      { type: "text", text: "hello" }]),
    said("m3", "bye", { id: "s9", attributes: { via: "slack" } })
  ] })]);
  assert.deepEqual(stored, expected({
    lastSeq: 7, synced: true, connection: CONNECTED, epoch: 1, nextKey: 2,
    items: [
      { key: "signal:m1", kind: "signal", signal: { id: "m1", type: "user", contents: "hi", attributes: {} } },
      { key: "turn:1", kind: "turn", runId: null, agentId: null, notes: [], parts: [
        { key: "message:m2:0", kind: "reasoning", text: "think" },
        { key: "message:m2:1", kind: "text", text: "hello" }] },
      { key: "signal:s9", kind: "signal", signal: { id: "s9", type: "user", contents: "bye", attributes: { via: "slack" } } }
    ],
    parts: { "message:m2:0": "turn:1", "message:m2:1": "turn:1" },
    seenSignals: { m1: true, s9: true }
  }));
});

test("resume: duplicates change nothing, a gap is recorded and the chunk applied", () => {
  const live = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r1"),
    chunk(2, "data-user-message", "r1", {}, { data: HI }),
    chunk(3, "text-start", "r1", { id: "t1" }),
    chunk(4, "text-delta", "r1", { id: "t1", text: "Hel" }),
    { type: "client-offline" },
    { type: "client-connecting", resuming: true },
    // the resumed snapshot: the page keeps its transcript (these messages are not drawn again)
    snapshot(4, { activeRunId: "r1", messages: [said("m1", "hi")] })
  ]);
  assert.equal(live.lastSeq, 4);
  assert.equal(live.items.length, 2);

  // a replay overlapping what the page holds: the same state, not a copy
  assert.equal(reduce(deepFreeze(live), chunk(4, "text-delta", "r1", { id: "t1", text: "Hel" })), live);
  assert.equal(reduce(live, chunk(2, "data-user-message", "r1", {}, { data: HI })), live);

  const after = run(live, [
    chunk(5, "text-delta", "r1", { id: "t1", text: "lo" }),
    chunk(5, "text-delta", "r1", { id: "t1", text: "lo" }),
    chunk(3, "text-start", "r1", { id: "t1" }),
    chunk(8, "text-delta", "r1", { id: "t1", text: "!" }), // 6 and 7 never reached this page
    chunk(9, "finish", "r1", { stepResult: { reason: "stop" } })
  ]);
  assert.deepEqual(after, expected({
    lastSeq: 9, synced: true, connection: CONNECTED, epoch: 1, nextKey: 2,
    items: [
      { key: "signal:s1", kind: "signal", signal: HI },
      { key: "turn:1", kind: "turn", runId: "r1", agentId: null, notes: [], parts: [{ key: "r1:text:t1", kind: "text", text: "Hello!" }] }
    ],
    runTurn: { r1: { turn: "turn:1", split: false } },
    parts: { "r1:text:t1": "turn:1" },
    seenSignals: { s1: true },
    runs: { r1: { status: "finished", reason: "stop" } },
    finishedRuns: ["r1"],
    gaps: [{ after: 5, seq: 8 }],
    effects: [{ type: "load-threads" }, { type: "run-finished", runId: "r1" }]
  }));
  // the next frame's effects are its own
  assert.deepEqual(run(after, [{ type: "pong" }]).effects, []);
});

test("a run that ends while the page is disconnected is finished by the resumed chunks", () => {
  const before = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r1"),
    chunk(2, "text-delta", "r1", { id: "t1", text: "par" }),
    { type: "client-offline" }
  ]);
  assert.deepEqual([before.activeRunId, before.runs, before.connection],
    ["r1", { r1: { status: "running", reason: null } }, { state: "offline", text: "Offline — retrying" }]);

  const resumed = run(before, [
    { type: "client-connecting", resuming: true },
    // the run is over on the server: no active run, its messages stored; the chunks after 2 follow
    snapshot(2, { activeRunId: null, messages: [answered("m1", [{ type: "text", text: "partial" }])] })
  ]);
  assert.deepEqual([resumed.activeRunId, resumed.runs.r1, resumed.items, resumed.lastSeq],
    [null, { status: "running", reason: null }, before.items, 2]);

  const done = run(resumed, [
    chunk(3, "text-delta", "r1", { id: "t1", text: "tial" }),
    chunk(4, "finish", "r1", { stepResult: { reason: "stop" } })
  ]);
  assert.deepEqual(done, expected({
    lastSeq: 4, synced: true, connection: CONNECTED, epoch: 1, nextKey: 2,
    items: [
      { key: "empty", kind: "empty" },
      { key: "turn:1", kind: "turn", runId: "r1", agentId: null, notes: [], parts: [{ key: "r1:text:t1", kind: "text", text: "partial" }] }
    ],
    runTurn: { r1: { turn: "turn:1", split: false } },
    parts: { "r1:text:t1": "turn:1" },
    runs: { r1: { status: "finished", reason: "stop" } },
    finishedRuns: ["r1"],
    effects: [{ type: "load-threads" }, { type: "run-finished", runId: "r1" }]
  }));
});

test("an approval that arrives before its tool card shows, then attaches to the card", () => {
  const approval = { runId: "r1", agentId: "bot", toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" } };
  const key = toolKey("r1", "c1");
  // joining in the middle of a run: the snapshot names the pending approval, the run's chunks follow
  const joined = run(initialState(), [snapshot(10, { activeRunId: "r1", approvals: [approval] })]);
  assert.deepEqual(joined, expected({
    lastSeq: 10, synced: true, connection: CONNECTED, epoch: 1, activeRunId: "r1", runLabel: WAITING_FOR_APPROVAL,
    items: [{ key: "empty", kind: "empty" }],
    approvals: { [key]: { runId: "r1", toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" },
      deciding: false, turn: null } }
  }));

  const carded = run(joined, [
    chunk(11, "start", "r1"),
    chunk(12, "data-user-message", "r1", {}, { data: HI }),
    chunk(13, "tool-call-approval", "r1", { toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" } }),
    chunk(14, "finish", "r1", { stepResult: { reason: "suspended" } })
  ]);
  const card = { runId: "r1", toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" }, status: "called",
    result: null, turn: "turn:1" };
  assert.deepEqual(carded, expected({
    lastSeq: 14, synced: true, connection: CONNECTED, epoch: 1, nextKey: 2,
    items: [
      { key: "signal:s1", kind: "signal", signal: HI },
      { key: "turn:1", kind: "turn", runId: "r1", agentId: null, notes: [], parts: [{ key: "tool:" + key, kind: "tool", tool: key }] }
    ],
    runTurn: { r1: { turn: "turn:1", split: false } },
    parts: { ["tool:" + key]: "turn:1" },
    seenSignals: { s1: true },
    runs: { r1: { status: "suspended", reason: "suspended" } },
    activeRunId: "r1", runLabel: WAITING_FOR_APPROVAL,
    tools: { [key]: card },
    approvals: { [key]: { runId: "r1", toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" },
      deciding: false, turn: "turn:1" } }
  }));

  // decided: the buttons wait; a refusal lets the user decide again; the result takes the card away
  const deciding = run(carded, [{ type: "client-approval-sent", runId: "r1", toolCallId: "c1" }]);
  assert.equal(deciding.approvals[key].deciding, true);
  assert.notEqual(deciding.items[1], carded.items[1]); // the turn holding the card is drawn again
  const refused = run(deciding, [{ type: "error", code: "approval_stale", message: "stale" }]);
  assert.deepEqual([refused.approvals[key].deciding, refused.errors, refused.items[2]],
    [false, [{ runId: null, code: "approval_stale", message: "stale" }],
      { key: "notice:2", kind: "notice", text: "⚠ stale (approval_stale)", cls: "error-note" }]);

  const done = run(refused, [
    chunk(15, "tool-result", "r1", { toolCallId: "c1", toolName: "delete-file", result: { deleted: "/tmp/x" } }),
    chunk(16, "text-delta", "r1", { id: "t2", text: "deleted" }),
    chunk(17, "finish", "r1", { stepResult: { reason: "stop" } })
  ]);
  assert.deepEqual([done.approvals, done.tools, done.items[1].parts, done.runs, done.activeRunId], [
    {},
    { [key]: { ...card, status: "done", result: { value: { deleted: "/tmp/x" }, isError: false } } },
    [{ key: "tool:" + key, kind: "tool", tool: key }, { key: "r1:text:t2", kind: "text", text: "deleted" }],
    { r1: { status: "finished", reason: "stop" } },
    null
  ]);
});

test("joining a run that waits for approval: its stored card is the card, once", () => {
  // the waiting run's messages are stored, and its chunks come again from its first one
  const approval = { runId: "r1", agentId: "bot", toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" } };
  const key = toolKey("r1", "c1");
  const joined = run(initialState(), [snapshot(20, { activeRunId: "r1", approvals: [approval], messages: [
    said("s1", "hi"),
    answered("a1", [invocation("c1", "delete-file", { path: "/tmp/x" })])
  ] })]);
  const card = { runId: "r1", toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" }, status: "called",
    result: null, turn: "turn:1" };
  const storedTurn = { key: "turn:1", kind: "turn", runId: null, agentId: null, notes: [],
    parts: [{ key: "tool:" + toolKey("message:a1", "c1"), kind: "tool", tool: key }] };
  assert.deepEqual([joined.tools, joined.approvals, joined.items], [
    { [key]: card },
    { [key]: { runId: "r1", toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" }, deciding: false,
      turn: "turn:1" } },
    [{ key: "signal:s1", kind: "signal", signal: { id: "s1", type: "user", contents: "hi", attributes: {} } },
      storedTurn]
  ]);

  const replayed = run(joined, [
    chunk(21, "start", "r1"),
    chunk(22, "data-user-message", "r1", {}, { data: HI }),
    chunk(23, "tool-call", "r1", { toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" } }),
    chunk(24, "tool-call-approval", "r1", { toolCallId: "c1", toolName: "delete-file", args: { path: "/tmp/x" } }),
    chunk(25, "finish", "r1", { stepResult: { reason: "suspended" } }),
    chunk(26, "tool-result", "r1", { toolCallId: "c1", toolName: "delete-file", result: "ok" })
  ]);
  assert.deepEqual([replayed.tools, replayed.approvals, replayed.items.map((item) => item.key)], [
    { [key]: { ...card, status: "done", result: { value: "ok", isError: false } } },
    {},
    ["signal:s1", "turn:1", "turn:2"] // the run's own turn, for what it says next
  ]);
});

test("a provider that reuses tool-call ids across runs: one card per run, each with its result", () => {
  const state = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r1"),
    chunk(2, "tool-call", "r1", { toolCallId: "call_0", toolName: "search", args: { q: "a" } }),
    chunk(3, "tool-result", "r1", { toolCallId: "call_0", toolName: "search", result: "A" }),
    chunk(4, "finish", "r1", { stepResult: { reason: "stop" } }),
    chunk(5, "start", "r2"),
    chunk(6, "tool-call", "r2", { toolCallId: "call_0", toolName: "search", args: { q: "b" } }),
    chunk(7, "tool-error", "r2", { toolCallId: "call_0", toolName: "search", error: "no index" }),
    chunk(8, "finish", "r2", { stepResult: { reason: "stop" } })
  ]);
  const k1 = toolKey("r1", "call_0");
  const k2 = toolKey("r2", "call_0");
  assert.deepEqual([state.tools, state.items, state.finishedRuns], [
    {
      [k1]: { runId: "r1", toolCallId: "call_0", toolName: "search", args: { q: "a" }, status: "done",
        result: { value: "A", isError: false }, turn: "turn:1" },
      [k2]: { runId: "r2", toolCallId: "call_0", toolName: "search", args: { q: "b" }, status: "failed",
        result: { value: "no index", isError: true }, turn: "turn:2" }
    },
    [
      { key: "empty", kind: "empty" },
      { key: "turn:1", kind: "turn", runId: "r1", agentId: null, notes: [], parts: [{ key: "tool:" + k1, kind: "tool", tool: k1 }] },
      { key: "turn:2", kind: "turn", runId: "r2", agentId: null, notes: [], parts: [{ key: "tool:" + k2, kind: "tool", tool: k2 }] }
    ],
    ["r1", "r2"]
  ]);

  // the stored messages of the same two runs: each result goes to the card of its own turn
  const stored = run(initialState(), [snapshot(8, { messages: [
    answered("a1", [invocation("call_0", "search", { q: "a" }, "A")]),
    said("u2", "again"),
    answered("a2", [invocation("call_0", "search", { q: "b" }, "B")])
  ] })]);
  const s1 = toolKey("message:a1", "call_0");
  const s2 = toolKey("message:a2", "call_0");
  assert.deepEqual(stored.tools, {
    [s1]: { runId: null, toolCallId: "call_0", toolName: "search", args: { q: "a" }, status: "done",
      result: { value: "A", isError: false }, turn: "turn:1" },
    [s2]: { runId: null, toolCallId: "call_0", toolName: "search", args: { q: "b" }, status: "done",
      result: { value: "B", isError: false }, turn: "turn:2" }
  });
  assert.deepEqual(stored.items.map((item) => item.key), ["turn:1", "signal:u2", "turn:2"]);
  // and a live run that reuses the id once more: a card of its own, the stored ones untouched
  const third = run(stored, [chunk(9, "start", "r3"),
    chunk(10, "tool-call", "r3", { toolCallId: "call_0", toolName: "search", args: { q: "c" } })]);
  assert.deepEqual(third.tools, { ...stored.tools, [toolKey("r3", "call_0")]: { runId: "r3", toolCallId: "call_0",
    toolName: "search", args: { q: "c" }, status: "called", result: null, turn: "turn:3" } });
});

test("the queue: the snapshot's, each queue frame's, and an input leaves it when its run shows it", () => {
  const q = (id, text) => ({ id, kind: "queued", runId: null, type: "user", contents: text, attributes: {},
    createdAt: "2026-01-01T00:00:00Z" });
  const counts = [];
  let state = initialState();
  for (const frame of [
    snapshot(3, { queued: [q("q1", "one")], activeRunId: "r1" }),
    { type: "queue", queued: [q("q1", "one"), q("q2", "two"), q("q3", "three")] },
    { type: "queue", queued: [q("q1", "one"), q("q3", "three")] }, // q2 cancelled
    chunk(4, "finish", "r1", { stepResult: { reason: "stop" } }),
    chunk(5, "start", "r2"),
    chunk(6, "data-signal", "r2", {}, { data: { id: "q1", type: "user", contents: "one" } }),
    { type: "abort-requested", aborted: true }
  ]) {
    state = run(state, [frame]);
    counts.push(state.queued.map((item) => item.id));
  }
  assert.deepEqual(counts, [["q1"], ["q1", "q2", "q3"], ["q1", "q3"], ["q1", "q3"], ["q1", "q3"], ["q3"], ["q3"]]);
  assert.deepEqual(state.queued, [q("q3", "three")]);
  // the input that woke run r2 stands before the run's turn
  assert.deepEqual(state.items.map((item) => item.key), ["signal:q1", "turn:1"]);
});

test("an input in the middle of a run: the run's next words go below it", () => {
  const state = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r1"),
    chunk(2, "text-delta", "r1", { id: "t1", text: "first" }),
    chunk(3, "data-signal", "r1", {}, { data: { id: "n1", type: "notification", contents: "CI failed" } }),
    chunk(4, "text-delta", "r1", { id: "t2", text: "second" }),
    chunk(5, "abort", "r1", { reason: "aborted" })
  ]);
  assert.deepEqual(state.items, [
    { key: "turn:1", kind: "turn", runId: "r1", agentId: null, notes: [], parts: [{ key: "r1:text:t1", kind: "text", text: "first" }] },
    { key: "signal:n1", kind: "signal", signal: { id: "n1", type: "notification", contents: "CI failed" } },
    { key: "turn:2", kind: "turn", runId: "r1", agentId: null, notes: [{ text: "■ Stopped", cls: "muted" }],
      parts: [{ key: "r1:text:t2", kind: "text", text: "second" }] }
  ]);
  assert.deepEqual([state.runs, state.activeRunId, state.effects], [{ r1: { status: "aborted", reason: "aborted" } }, null, []]);
  // a notification asks for the notifications panel to be read again
  assert.deepEqual(run(initialState(), [snapshot(0), chunk(1, "data-signal", null, {}, {
    data: { id: "n2", type: "notification", contents: "x" } })]).effects, [{ type: "load-notifications" }]);
});

test("a signal id is the sender's: \"__proto__\" or \"toString\" shows once like any other", () => {
  const sig = (id) => ({ id, type: "user", contents: id });
  const state = run(initialState(), [snapshot(0), ...["__proto__", "toString", "__proto__", "toString"].map(
    (id, i) => chunk(i + 1, "data-signal", null, {}, { data: sig(id) }))]);
  assert.deepEqual(state.items.map((item) => item.key), ["signal:__proto__", "signal:toString"]);
  assert.deepEqual(Object.keys(state.seenSignals), ["__proto__", "toString"]);
});

test("events past the retention window: the thread's messages replace the transcript", () => {
  const state = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r1"),
    chunk(2, "text-delta", "r1", { id: "t1", text: "lost" }),
    { type: "client-offline" },
    snapshot(2),
    chunk(40, "data-thread-snapshot", null, {}, { data: { messages: [said("m1", "kept")] } })
  ]);
  assert.deepEqual([state.items, state.gaps, state.lastSeq, state.epoch], [
    [{ key: "signal:m1", kind: "signal", signal: { id: "m1", type: "user", contents: "kept", attributes: {} } }],
    [], 40, 2
  ]);
});

test("another thread: nothing of the last one stays, keys are never reused", () => {
  const before = run(initialState(), [snapshot(5), chunk(6, "start", "r1")]);
  const reset = run(before, [{ type: "client-reset" }]);
  assert.deepEqual(reset, expected({ nextKey: 2, epoch: 2 }));
});

test("each answer is labelled with the agent that wrote it, a live one with the page's agent", () => {
  const state = run(initialState(), [
    { type: "client-reset", agentId: "triage" },
    snapshot(9, { messages: [
      said("u1", "first"),
      { ...answered("a1", [{ type: "text", text: "from ops" }]),
        content: { format: 2, parts: [{ type: "text", text: "from ops" }], metadata: { agentId: "ops", runId: "r1" } } },
      { ...answered("a2", []), content: { format: 2, parts: [{ type: "text", text: "still ops" }],
        metadata: { agentId: "ops", runId: "r1" } } },
      said("u2", "second"),
      { ...answered("a3", []), content: { format: 2, parts: [{ type: "text", text: "from triage" }],
        metadata: { agentId: "triage", runId: "r2" } } }
    ] }),
    chunk(10, "start", "r3"),
    chunk(11, "text-delta", "r3", { id: "t", text: "live" })
  ]);
  assert.deepEqual(state.items.filter((i) => i.kind === "turn").map((t) => [t.agentId, t.parts.length]),
    [["ops", 2], ["triage", 1], ["triage", 1]]);
  assert.equal(state.agentId, "triage");
});

test("a failed run: its stored reason and a retry of its input, live and after a reload", () => {
  const failed = { ...answered("e1", []), content: { format: 2, parts: [],
    metadata: { agentId: "ops", runId: "r1", error: { code: "model_error", message: "OPENAI_API_KEY is not set" } } } };
  const reloaded = run(initialState(), [snapshot(5, { messages: [said("u1", "hello there"), failed] })]);
  assert.deepEqual(reloaded.items.map((i) => [i.kind, i.notes || null]), [
    ["signal", null],
    ["turn", [{ text: "⚠ OPENAI_API_KEY is not set", cls: "error-note", retry: "hello there" }]]
  ]);

  const live = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r1"),
    chunk(2, "data-user-message", "r1", {}, { data: { id: "s1", type: "user", contents: "try me" } }),
    chunk(3, "finish", "r1", { stepResult: { reason: "error" } })
  ]);
  const turn = live.items.find((i) => i.kind === "turn");
  assert.deepEqual(turn.notes, [{ text: "The run failed.", cls: "error-note", retry: "try me" }]);
});

test("a budget or limit refusal is a card of its own, live and after a reload; a soft budget's notice a line", () => {
  const message = "budget 'daily-spend' is spent (5.02 USD of 5.00 USD per day); it resets at 2026-12-04T00:00:00+00:00";
  const refusedEntry = { ...answered("e1", []), content: { format: 2, parts: [],
    metadata: { agentId: "ops", runId: "r1", error: { code: "budget_exceeded", message: message } } } };
  const noticeEntry = { ...answered("e2", []), content: { format: 2, parts: [],
    metadata: { agentId: "ops", runId: "r0", notice: { code: "budget_soft_limit", budget: "watch", message: "Budget 'watch' is spent." } } } };
  const reloaded = run(initialState(), [snapshot(5, { messages: [said("u0", "hi"),
    { id: "a0", role: "assistant", content: { format: 2, parts: [{ type: "text", text: "hello" }], metadata: { agentId: "ops" } } },
    noticeEntry, said("u1", "more"), refusedEntry] })]);
  assert.deepEqual(reloaded.items.map((i) => [i.kind, i.notes || null]), [
    ["signal", null],
    ["turn", [{ text: "Budget 'watch' is spent.", cls: "limit-notice" }]],
    ["signal", null],
    ["turn", [{ text: "Budget reached: " + message, cls: "limit-card" }]]
  ]);

  const live = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r2"),
    chunk(2, "data-user-message", "r2", {}, { data: { id: "s1", type: "user", contents: "again" } }),
    chunk(3, "error", "r2", { error: { code: "too_many_active_runs", message: "resource 'alice' already has 1 active run(s), its limit; send again when one ends" } }),
    chunk(4, "finish", "r2", { stepResult: { reason: "error" } })
  ]);
  const turn = live.items.find((i) => i.kind === "turn");
  assert.deepEqual(turn.notes, [{ text: "Too many active runs: resource 'alice' already has 1 active run(s), its limit; send again when one ends",
    cls: "limit-card", retry: "again" }]);
  assert.deepEqual(live.errors.map((e) => e.code), ["too_many_active_runs"]);

  const noticed = run(initialState(), [snapshot(0), chunk(1, "start", "r3"),
    chunk(2, "data-budget-notice", "r3", {}, { data: { code: "budget_soft_limit", budget: "watch", message: "Budget 'watch' is spent." } })]);
  assert.deepEqual(noticed.items.find((i) => i.kind === "turn").notes, [{ text: "Budget 'watch' is spent.", cls: "limit-notice" }]);
});

test("a refused message asks the page to give its text back; other errors do not", () => {
  const refused = run(initialState(), [snapshot(0),
    { type: "error", code: "model_unavailable", message: "no key", frame: "send-message" }]);
  assert.deepEqual(refused.effects, [{ type: "refused" }]);
  const other = run(initialState(), [snapshot(0),
    { type: "error", code: "approval_stale", message: "gone", frame: "tool-approval" }]);
  assert.deepEqual(other.effects, []);
});

test("a model attempt that failed mid-answer: its streamed parts and calls go, the next attempt's stay", () => {
  const state = run(initialState(), [
    snapshot(0),
    chunk(1, "start", "r1"),
    chunk(2, "text-start", "r1", { id: "m1-t" }),
    chunk(3, "text-delta", "r1", { id: "m1-t", text: "half an ans" }),
    chunk(4, "tool-call", "r1", { toolCallId: "c1", toolName: "search", args: { q: "x" } }),
    chunk(5, "data-model-retry", "r1", {}, { data: { stepNumber: 0, attempt: 1, next: "local/echo",
      discarded: ["m1-t", "c1"] }, transient: true }),
    chunk(6, "text-start", "r1", { id: "m2-t" }),
    chunk(7, "text-delta", "r1", { id: "m2-t", text: "the whole answer" })
  ]);
  const turn = state.items.find((i) => i.kind === "turn");
  assert.deepEqual(turn.parts, [{ key: "r1:text:m2-t", kind: "text", text: "the whole answer" }]);
  assert.deepEqual(state.tools, {});
  assert.deepEqual(Object.keys(state.parts), ["r1:text:m2-t"]);
});

test("figures: stored answers ask for their runs' figures, which go under each run's last turn", () => {
  const stamped = (id, text, runId) => ({ ...answered(id, []), content: { format: 2,
    parts: [{ type: "text", text }], metadata: { agentId: "ops", runId } } });
  const loaded = run(initialState(), [snapshot(9, { messages: [
    said("u1", "first"), stamped("a1", "one", "r1"), stamped("a2", "two", "r2"), said("u2", "second"),
    stamped("a3", "three", "r3")
  ] })]);
  // two runs answered without an input between them: two turns, one per run
  assert.deepEqual(loaded.items.filter((i) => i.kind === "turn").map((t) => [t.key, t.parts.map((p) => p.text)]),
    [["turn:1", ["one"]], ["turn:2", ["two"]], ["turn:3", ["three"]]]);
  assert.deepEqual(loaded.turnRuns, { "turn:1": "r1", "turn:2": "r2", "turn:3": "r3" });
  assert.deepEqual(loaded.effects, [{ type: "load-figures", runIds: ["r1", "r2", "r3"] }]);

  const f2 = { id: "r2", usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 }, durationMs: 1200,
    models: ["local/echo"] };
  const shown = run(loaded, [{ type: "client-figures", runs: [f2] }]);
  assert.deepEqual(shown.items.filter((i) => i.kind === "turn").map((t) => t.figures || null), [null, f2, null]);
  assert.equal(shown.items[0], loaded.items[0]); // what did not change is the same object
  assert.equal(shown.items[1], loaded.items[1]);

  // a live run: its figures go under its last turn, and its answer is announced once it is done
  const live = run(shown, [
    chunk(10, "start", "r4"),
    chunk(11, "text-delta", "r4", { id: "t", text: "live " }),
    chunk(12, "text-delta", "r4", { id: "t", text: "answer" }),
    chunk(13, "finish", "r4", { stepResult: { reason: "stop" } })
  ]);
  assert.deepEqual(live.effects, [{ type: "load-threads" }, { type: "run-finished", runId: "r4" }]);
  assert.equal(answerText(live, "r4"), "live answer");
  assert.equal(answerText(live, "r3"), "three");
  const f4 = { id: "r4", usage: {}, durationMs: 10, models: [] };
  const done = run(live, [{ type: "client-figures", runs: [f4] }]);
  assert.deepEqual(done.items[done.items.length - 1].figures, f4);

  // a resumed page keeps what it holds; a rebuilt one puts the known figures back at once
  const rebuilt = run(done, [{ type: "data-thread-snapshot", seq: 14, runId: null, data: { messages: [
    said("u1", "first"), stamped("a2", "two", "r2"), stamped("a5", "five", "r5")] } }]);
  assert.deepEqual(rebuilt.items.filter((i) => i.kind === "turn").map((t) => t.figures || null), [f2, null]);
  assert.deepEqual(rebuilt.effects, [{ type: "load-figures", runIds: ["r5"] }]);
});

test("a long thread: the newest messages, earlier ones put before everything the page holds", () => {
  const opened = run(initialState(), [snapshot(4, { hasEarlier: true, messages: [
    said("m3", "third"), answered("m4", [{ type: "text", text: "fourth" }], )
  ] })]);
  assert.deepEqual(opened.earlier, { before: "m3", loading: false, failed: null });
  assert.deepEqual(opened.items.map((i) => i.key), ["earlier", "signal:m3", "turn:1"]);
  assert.deepEqual(opened.items[0], { key: "earlier", kind: "earlier", loading: false, failed: null });

  // a run streams meanwhile; then the reader asks for the earlier messages
  const live = run(opened, [
    chunk(5, "start", "r1"), chunk(6, "text-start", "r1", { id: "t" }), chunk(7, "text-delta", "r1", { id: "t", text: "live" }),
    { type: "client-earlier-loading", before: "m3" }
  ]);
  assert.deepEqual(live.items[0], { key: "earlier", kind: "earlier", loading: true, failed: null });
  const more = run(live, [{ type: "client-earlier", before: "m3", hasEarlier: true, messages: [
    said("m1", "first"),
    answered("m2", [{ type: "text", text: "second" }, invocation("c1", "lookup", { q: 1 }, { n: 2 })])
  ] }]);
  assert.deepEqual(more.items.map((i) => i.key),
    ["earlier", "signal:m1", "turn:3", "signal:m3", "turn:1", "turn:2"]);
  assert.deepEqual(more.items[2].parts.map((p) => p.kind), ["text", "tool"]);
  assert.equal(more.tools[toolKey("message:m2", "c1")].turn, "turn:3");
  assert.deepEqual(more.items[5].parts.map((p) => p.text), ["live"]); // the live turn is kept
  assert.equal(more.epoch, opened.epoch); // nothing was rebuilt: the reader's place stays
  assert.deepEqual(more.earlier, { before: "m1", loading: false, failed: null });
  assert.equal(more.standalone, live.standalone);

  // the first message: the line goes; a failure before that shows on it
  const failed = run(more, [{ type: "client-earlier-loading", before: "m1" },
    { type: "client-earlier-failed", before: "m1", text: "HTTP 502" }]);
  assert.deepEqual(failed.items[0], { key: "earlier", kind: "earlier", loading: false, failed: "HTTP 502" });
  const all = run(failed, [{ type: "client-earlier", before: "m1", hasEarlier: false, messages: [said("m0", "zeroth")] }]);
  assert.equal(all.earlier, null);
  assert.deepEqual(all.items.map((i) => i.key), ["signal:m0", "signal:m1", "turn:3", "signal:m3", "turn:1", "turn:2"]);
});

test("earlier messages that arrive for another window, or after a reset, change nothing", () => {
  const opened = run(initialState(), [snapshot(2, { hasEarlier: true, messages: [said("m3", "third")] })]);
  const stale = { type: "client-earlier", before: "m9", hasEarlier: false, messages: [said("m1", "first")] };
  assert.equal(run(opened, [stale]), opened);
  const reset = run(opened, [{ type: "client-reset", agentId: "a" }]);
  assert.equal(reset.earlier, null);
  assert.equal(run(reset, [{ ...stale, before: "m3" }]), reset);
});

test("a snapshot with none of its messages fitting asks for the newest over HTTP, and shows no empty line", () => {
  const opened = run(initialState(), [snapshot(1, { hasEarlier: true, messages: [] })]);
  assert.deepEqual(opened.items, [{ key: "earlier", kind: "earlier", loading: false, failed: null }]);
  assert.deepEqual(opened.earlier, { before: null, loading: false, failed: null });
  const read = run(opened, [{ type: "client-earlier", before: null, hasEarlier: false, messages: [said("m1", "big")] }]);
  assert.deepEqual(read.items.map((i) => i.key), ["signal:m1"]);
});

test("a resumed connection keeps the page's window; a thread snapshot chunk starts a new one", () => {
  const opened = run(initialState(), [snapshot(2, { hasEarlier: true, messages: [said("m3", "third")] })]);
  const resumed = run(opened, [snapshot(2, { hasEarlier: false, messages: [said("m3", "third")] })]);
  assert.deepEqual(resumed.earlier, opened.earlier);
  const replaced = run(resumed, [{ type: "data-thread-snapshot", runId: null, from: "AGENT", seq: 9,
    data: { threadId: "t", resourceId: "r", hasEarlier: true, messages: [said("m7", "seventh")] } }]);
  assert.deepEqual(replaced.earlier, { before: "m7", loading: false, failed: null });
  assert.deepEqual(replaced.items.map((i) => i.key), ["earlier", "signal:m7"]);
});
