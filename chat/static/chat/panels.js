/* The panels beside the conversation: the thread list (with its search), the notifications panel
 * (its badge, Mark read, Dismiss) and the queue of inputs waiting for a run (with Cancel). Each
 * draws from the JSON routes or from the thread's state; none of them touches the transcript. */
import { api } from "./api.js";
import { clear, el } from "./render.js";
import { contentsText } from "./state.js";

/* threadList(ui, {open(threadId), current() -> thread id}) -> {load(), mark(), listed()} */
export function threadList(ui, actions) {
  let query = "";
  let searchTimer = null;

  function mark() {
    ui.threads.querySelectorAll(".thread-item").forEach(function (b) {
      b.classList.toggle("current", b.getAttribute("data-thread-id") === actions.current());
    });
  }

  function load() {
    api("GET", "/chat/api/threads?q=" + encodeURIComponent(query)).then(function (data) {
      const threads = data.threads || [];
      clear(ui.threads);
      threads.forEach(function (t) {
        const li = el("li");
        const b = el("button", "thread-item");
        b.type = "button";
        b.setAttribute("data-thread-id", t.id);
        b.appendChild(el("span", "thread-title", t.title || t.preview || "Untitled"));
        b.appendChild(el("span", "thread-when", new Date(t.updatedAt).toLocaleString()));
        b.addEventListener("click", function () { actions.open(t.id); });
        li.appendChild(b);
        ui.threads.appendChild(li);
      });
      if (!threads.length) ui.threads.appendChild(el("li", "muted empty", query ? "No match" : "No threads yet"));
      mark();
    }).catch(function () {});
  }

  /* Whether the open thread is in the list (a thread is listed once its first input is stored). */
  function listed() {
    return !!ui.threads.querySelector(".thread-item.current");
  }

  ui.search.addEventListener("input", function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { query = ui.search.value; load(); }, 200);
  });
  return { load: load, mark: mark, listed: listed };
}

/* notifications(ui) -> {load(), toggle(open), isOpen()} */
export function notifications(ui) {
  function post(id, action) {
    return api("POST", "/chat/api/notifications/" + encodeURIComponent(id) + "/" + action).then(load);
  }

  function record(r) {
    const li = el("li", "notif status-" + r.status);
    li.setAttribute("data-record-id", r.id);
    const head = el("div", "card-head");
    head.appendChild(el("span", "chip chip-priority", r.priority));
    head.appendChild(el("span", "notif-source", r.source + " · " + r.kind));
    head.appendChild(el("span", "muted notif-status", r.status));
    li.appendChild(head);
    li.appendChild(el("div", "plain", r.summary + (r.coalescedCount > 1 ? " (×" + r.coalescedCount + ")" : "")));
    const row = el("div", "card-actions");
    if (r.status === "pending" || r.status === "delivered") {
      const read = el("button", "link-btn notif-read", "Mark read");
      read.type = "button";
      read.addEventListener("click", function () { post(r.id, "read"); });
      row.appendChild(read);
    }
    const dismiss = el("button", "link-btn notif-dismiss", "Dismiss");
    dismiss.type = "button";
    dismiss.addEventListener("click", function () { post(r.id, "dismiss"); });
    row.appendChild(dismiss);
    li.appendChild(row);
    return li;
  }

  function load() {
    api("GET", "/chat/api/notifications").then(function (data) {
      const unread = data.unread || 0;
      ui.notifCount.hidden = unread === 0;
      ui.notifCount.textContent = String(unread);
      ui.notifPending.textContent = (data.pending || 0) + " pending";
      clear(ui.notifList);
      (data.records || []).forEach(function (r) { ui.notifList.appendChild(record(r)); });
      if (!(data.records || []).length) ui.notifList.appendChild(el("li", "muted empty", "Nothing here"));
    }).catch(function () {});
  }

  function toggle(open) {
    ui.notifPanel.hidden = !open;
    ui.notifToggle.setAttribute("aria-expanded", String(open));
    if (open) load();
  }

  ui.notifToggle.addEventListener("click", function () { toggle(ui.notifPanel.hidden); });
  ui.notifClose.addEventListener("click", function () { toggle(false); });
  return { load: load, toggle: toggle, isOpen: function () { return !ui.notifPanel.hidden; } };
}

/* queuePanel(ui, {cancel(signalId)}) -> draw(queued): the list is redrawn when the state's queue
 * is another array. */
export function queuePanel(ui, actions) {
  let drawn = null;
  return function draw(queued) {
    if (queued === drawn) return false;
    drawn = queued;
    clear(ui.queueList);
    queued.forEach(function (q) {
      const li = el("li", "queued-item");
      li.setAttribute("data-signal-id", q.id);
      li.appendChild(el("span", "queued-text", contentsText(q.contents)));
      const cancel = el("button", "link-btn", "Cancel");
      cancel.type = "button";
      cancel.addEventListener("click", function () { actions.cancel(q.id); });
      li.appendChild(cancel);
      ui.queueList.appendChild(li);
    });
    ui.queue.hidden = queued.length === 0;
    return true;
  };
}
