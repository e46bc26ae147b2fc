/* One thread's websocket (docs/chat.md, The websocket): it reconnects by itself after a drop
 * (backoff 0.5 s doubling to 10 s, reset by a snapshot), resumes with ?lastSeq=N once the page holds
 * the thread, sends a ping every 25 s so that proxies keep a quiet socket open, and stops for good
 * on the close codes that say retrying cannot help: 4401 (not signed in) and 4404 (no such thread
 * or agent for this user). 1013 (the subscriber fell behind) and every other close retry.
 */

export const FINAL_CLOSE_CODES = { 4401: "signed-out", 4404: "not-found" };
export const PING_MS = 25000; // mastra_site.checks.CHAT_PING_S
export const RETRY_FIRST_MS = 500;
export const RETRY_MAX_MS = 10000;

export function retryDelay(retries) {
  return Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * Math.pow(2, retries));
}

export function threadUrl(location, agentId, threadId, lastSeq) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  let url = proto + "//" + location.host + "/ws/agents/" + encodeURIComponent(agentId) + "/threads/" +
    encodeURIComponent(threadId) + "/";
  if (lastSeq !== null && lastSeq !== undefined) url += "?lastSeq=" + lastSeq;
  return url;
}

/* openThreadSocket(options) -> {send(frame) -> bool, close()}
 *
 * options: agentId, threadId; resumeSeq() -> the seq to resume after, or null before the page holds
 * the thread; onFrame(frame); onConnecting(resuming); onOffline(); onFinal(reason) with reason
 * "signed-out" or "not-found". WebSocket, location and the timer functions can be passed in
 * (a test's); the page's own are the default. */
export function openThreadSocket(options) {
  const WS = options.WebSocket || globalThis.WebSocket;
  const where = options.location || globalThis.location;
  const timers = options.timers || globalThis;
  let socket = null;
  let retries = 0;
  let retryTimer = null;
  let pingTimer = null;
  let closed = false;

  function connect() {
    if (closed) return;
    retryTimer = null;
    const seq = options.resumeSeq();
    const current = new WS(threadUrl(where, options.agentId, options.threadId, seq));
    socket = current;
    options.onConnecting(seq !== null && seq !== undefined);
    current.onopen = function () {
      if (current !== socket) return;
      pingTimer = timers.setInterval(function () {
        if (current === socket && current.readyState === WS.OPEN) current.send(JSON.stringify({ type: "ping" }));
      }, PING_MS);
    };
    current.onmessage = function (event) {
      if (current !== socket) return;
      let frame;
      try { frame = JSON.parse(event.data); } catch (e) { return; }
      if (frame && frame.type === "snapshot") retries = 0;
      options.onFrame(frame);
    };
    current.onclose = function (event) {
      if (current !== socket) return;
      socket = null;
      timers.clearInterval(pingTimer);
      pingTimer = null;
      const final = FINAL_CLOSE_CODES[event.code];
      if (final) {
        closed = true;
        options.onFinal(final);
        return;
      }
      const delay = retryDelay(retries);
      retries += 1;
      options.onOffline();
      retryTimer = timers.setTimeout(connect, delay);
    };
  }

  function send(frame) {
    if (!socket || socket.readyState !== WS.OPEN) return false;
    socket.send(JSON.stringify(frame));
    return true;
  }

  /* For good: no retry, no callback any more. */
  function close() {
    closed = true;
    timers.clearTimeout(retryTimer);
    timers.clearInterval(pingTimer);
    const old = socket;
    socket = null;
    if (old) old.close();
  }

  connect();
  return { send: send, close: close };
}
