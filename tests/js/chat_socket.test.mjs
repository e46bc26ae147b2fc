// The chat page's websocket (chat/static/chat/socket.js) with a scripted WebSocket and timers:
// the URLs it opens, its backoff, its pings, and the close codes that end it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { openThreadSocket, retryDelay } from "../../chat/static/chat/socket.js";

class FakeSocket {
  static OPEN = 1;
  static opened = [];

  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.closed = false;
    FakeSocket.opened.push(this);
  }

  send(data) { this.sent.push(JSON.parse(data)); }
  close() { this.closed = true; }
  open() { this.readyState = FakeSocket.OPEN; this.onopen(); }
  frame(data) { this.onmessage({ data: JSON.stringify(data) }); }
  drop(code) { this.readyState = 3; this.onclose({ code }); }
}

function fakeTimers() {
  const timers = { pending: [], intervals: new Map(), next: 1 };
  timers.setTimeout = (fn, ms) => { timers.pending.push({ fn, ms }); return timers.next++; };
  timers.clearTimeout = () => {};
  timers.setInterval = (fn, ms) => { const id = timers.next++; timers.intervals.set(id, { fn, ms }); return id; };
  timers.clearInterval = (id) => { timers.intervals.delete(id); };
  timers.fired = [];
  timers.fire = () => { const t = timers.pending.shift(); timers.fired.push(t.ms); t.fn(); };
  return timers;
}

function open(resumeSeq) {
  FakeSocket.opened = [];
  const timers = fakeTimers();
  const events = [];
  const socket = openThreadSocket({
    agentId: "chat-bot", threadId: "thread 1", resumeSeq,
    WebSocket: FakeSocket, timers, location: { protocol: "https:", host: "chat.example" },
    onFrame: (f) => events.push(["frame", f.type]),
    onConnecting: (resuming) => events.push(["connecting", resuming]),
    onOffline: () => events.push(["offline"]),
    onFinal: (reason) => events.push(["final", reason])
  });
  return { socket, timers, events };
}

test("the backoff: 0.5 s doubling to 10 s", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map(retryDelay), [500, 1000, 2000, 4000, 8000, 10000, 10000]);
});

test("a drop reconnects with the last seq, backing off until a snapshot arrives", () => {
  let seq = null;
  const { timers, events } = open(() => seq);
  assert.equal(FakeSocket.opened[0].url, "wss://chat.example/ws/agents/chat-bot/threads/thread%201/");
  FakeSocket.opened[0].open();
  FakeSocket.opened[0].frame({ type: "snapshot", lastSeq: 0 });
  seq = 12;
  FakeSocket.opened[0].drop(1006);
  FakeSocket.opened[0].drop(1006); // a stale socket's events are ignored
  timers.fire();
  FakeSocket.opened[1].drop(1013); // fell behind: retry too
  timers.fire();
  FakeSocket.opened[2].open();
  FakeSocket.opened[2].frame({ type: "snapshot", lastSeq: 12 });
  FakeSocket.opened[2].drop(1006);
  assert.deepEqual(FakeSocket.opened.map((s) => s.url.split("/").pop()), ["", "?lastSeq=12", "?lastSeq=12"]);
  assert.deepEqual(timers.fired, [500, 1000]);
  assert.deepEqual(timers.pending.map((t) => t.ms), [500]); // the snapshot reset the backoff
  assert.deepEqual(events, [
    ["connecting", false], ["frame", "snapshot"], ["offline"], ["connecting", true], ["offline"],
    ["connecting", true], ["frame", "snapshot"], ["offline"]
  ]);
});

test("4401 and 4404 end the socket: no retry", () => {
  for (const [code, reason] of [[4401, "signed-out"], [4404, "not-found"]]) {
    const { timers, events } = open(() => null);
    FakeSocket.opened[0].drop(code);
    assert.deepEqual([events, timers.pending.length, FakeSocket.opened.length],
      [[["connecting", false], ["final", reason]], 0, 1]);
  }
});

test("a ping every 25 s while open; send refuses while not open; close ends it for good", () => {
  const { socket, timers, events } = open(() => null);
  assert.equal(socket.send({ type: "abort" }), false);
  FakeSocket.opened[0].open();
  const [ping] = timers.intervals.values();
  assert.equal(ping.ms, 25000);
  ping.fn();
  assert.equal(socket.send({ type: "abort" }), true);
  assert.deepEqual(FakeSocket.opened[0].sent, [{ type: "ping" }, { type: "abort" }]);
  socket.close();
  FakeSocket.opened[0].drop(1000);
  assert.deepEqual([FakeSocket.opened[0].closed, timers.intervals.size, timers.pending.length, events.length],
    [true, 0, 0, 1]);
});
