/* The panels beside the conversation: the thread list (with its search), the notifications panel
 * (its badge, Mark read, Dismiss) and the queue of inputs waiting for a run (with Cancel). Each
 * draws from the JSON routes or from the thread's state; none of them touches the transcript. */
import { api } from "./api.js";
import { clear, el } from "./render.js";
import { contentsText } from "./state.js";

/* A thread row's buttons, by class. */
const ROW_CONTROLS = ["thread-item", "thread-rename", "thread-delete"];

/* Where the keyboard's focus is among the items of ``list`` (the elements matching ``selector``,
 * each naming itself in its ``idAttr``): ``{id, index, control, item}``, ``control`` being which of
 * the ``controls`` classes the focused element has; null when the focus is elsewhere. */
function focusIn(list, selector, idAttr, controls) {
  const focused = document.activeElement;
  const item = focused && focused !== list && list.contains(focused) ? focused.closest(selector) : null;
  if (!item) return null;
  return { id: item.getAttribute(idAttr), index: Array.prototype.indexOf.call(list.children, item), item: item,
           control: controls.filter(function (c) { return focused.classList.contains(c); })[0] };
}

/* After ``list`` is drawn again, where ``held`` (``focusIn``) goes back: ``{item, same}``, the item
 * of the same id (``same``), else the one now at its index (the last when past the end; none for an
 * index of -1). */
function itemAgain(list, selector, idAttr, held) {
  const items = list.querySelectorAll(selector);
  const same = Array.prototype.filter.call(items, function (x) { return x.getAttribute(idAttr) === held.id; })[0];
  if (same) return { item: same, same: true };
  return { item: held.index >= 0 ? items[Math.min(held.index, items.length - 1)] : undefined, same: false };
}

/* threadList(ui, {open(threadId), current() -> thread id, deleted(threadId)}) -> {load(), mark(),
 * listed()}. Each thread has Rename (in place: Enter saves, Esc cancels) and Delete (asks first).
 * A row being renamed or asked about is kept as it is when the list is drawn again (a run that
 * ends, a search, another tab's thread): what was typed, and the focus, stay; so does a focus on
 * a row's button. */
export function threadList(ui, actions) {
  let query = "";
  let searchTimer = null;

  function mark() {
    ui.threads.querySelectorAll(".thread-item").forEach(function (b) {
      const current = b.getAttribute("data-thread-id") === actions.current();
      b.classList.toggle("current", current);
      if (current) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    });
  }

  /* A small line icon (SVG built node by node: no markup from strings). */
  function icon(d) {
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("width", "15");
    svg.setAttribute("height", "15");
    svg.setAttribute("aria-hidden", "true");
    const path = document.createElementNS(NS, "path");
    path.setAttribute("d", d);
    path.setAttribute("fill", "none");
    path.setAttribute("stroke", "currentColor");
    path.setAttribute("stroke-width", "2");
    path.setAttribute("stroke-linecap", "round");
    path.setAttribute("stroke-linejoin", "round");
    svg.appendChild(path);
    return svg;
  }
  const PENCIL = "M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4";
  const TRASH = "M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13M10 11v6M14 11v6";

  function button(cls, text, label) {
    const b = el("button", cls, text);
    b.type = "button";
    if (label) b.setAttribute("aria-label", label);
    return b;
  }

  function renameForm(li, t, name) {
    const form = el("form", "thread-rename-form");
    const input = el("input", "thread-title-input");
    input.type = "text";
    input.value = t.title || t.preview || "";
    input.placeholder = t.preview || "Title";
    input.maxLength = 255;
    input.setAttribute("aria-label", "New title for " + name);
    const save = button("primary small", "Save");
    save.type = "submit";
    const cancel = button("small", "Cancel");
    const error = el("span", "form-error small-error");
    error.setAttribute("role", "alert");
    form.appendChild(input);
    form.appendChild(save);
    form.appendChild(cancel);
    form.appendChild(error);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      save.disabled = true;
      api("PATCH", "/chat/api/threads/" + encodeURIComponent(t.id), { title: input.value }).then(function () {
        delete li.dataset.editing;
        load(t.id);
      }, function (err) { save.disabled = false; error.textContent = err.message; });
    });
    cancel.addEventListener("click", function () { restore(li, t); });
    input.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); restore(li, t); }
    });
    clear(li);
    li.dataset.editing = "rename";
    li.appendChild(form);
    input.focus();
    input.select();
  }

  /* Puts the thread's row back in place of its form or question, its button focused. */
  function restore(li, t) {
    const fresh = row(t);
    li.replaceWith(fresh);
    mark();
    fresh.querySelector(".thread-item").focus();
  }

  function confirmDelete(li, t, name) {
    const box = el("div", "thread-confirm");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Delete " + name + "?");
    box.appendChild(el("span", "confirm-text", "Delete “" + name + "” and its messages?"));
    const yes = button("danger small confirm-delete", "Delete");
    const no = button("small", "Cancel");
    const error = el("span", "form-error small-error");
    error.setAttribute("role", "alert");
    yes.addEventListener("click", function () {
      yes.disabled = true;
      api("DELETE", "/chat/api/threads/" + encodeURIComponent(t.id)).then(function () {
        delete li.dataset.editing;
        actions.deleted(t.id);
        load();
        ui.newThread.focus();
      }, function (err) { yes.disabled = false; error.textContent = err.message; });
    });
    no.addEventListener("click", function () { restore(li, t); });
    box.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); restore(li, t); }
    });
    box.appendChild(yes);
    box.appendChild(no);
    box.appendChild(error);
    clear(li);
    li.dataset.editing = "delete";
    li.appendChild(box);
    no.focus();
  }

  function row(t) {
    const li = el("li", "thread-row");
    li.setAttribute("data-thread-id", t.id);
    const name = t.title || t.preview || "Untitled";
    const b = button("thread-item");
    b.setAttribute("data-thread-id", t.id);
    b.appendChild(el("span", "thread-title", name));
    b.appendChild(el("span", "thread-when", new Date(t.updatedAt).toLocaleString()));
    b.addEventListener("click", function () { actions.open(t.id); });
    li.appendChild(b);
    const tools = el("div", "thread-actions");
    const rename = button("icon-btn small thread-rename", undefined, "Rename " + name);
    const remove = button("icon-btn small thread-delete", undefined, "Delete " + name);
    rename.appendChild(icon(PENCIL));
    remove.appendChild(icon(TRASH));
    rename.title = "Rename";
    remove.title = "Delete";
    rename.addEventListener("click", function () { renameForm(li, t, name); });
    remove.addEventListener("click", function () { confirmDelete(li, t, name); });
    tools.appendChild(rename);
    tools.appendChild(remove);
    li.appendChild(tools);
    return li;
  }

  /* Draws the list again; ``focusId``: the thread whose button gets the focus (after a rename).
   * Otherwise a focus on a row's button (the thread, Rename, Delete) stays on the same button of
   * the same thread, or of the thread now in its place when it has gone. */
  function load(focusId) {
    api("GET", "/chat/api/threads?q=" + encodeURIComponent(query)).then(function (data) {
      const threads = data.threads || [];
      const held = typeof focusId === "string" ? { id: focusId, control: "thread-item", index: -1 } : focusHeld();
      const kept = editingRows();
      draw(threads.map(function (t) { return kept.get(t.id) || row(t); }));
      if (!threads.length) ui.threads.appendChild(el("li", "muted empty", query ? "No match" : "No threads yet"));
      mark();
      if (held) focusAgain(held);
    }).catch(function () {});
  }

  /* Where the focus is among the rows' buttons (not in a form or a question: those rows stay). */
  function focusHeld() {
    const held = focusIn(ui.threads, ".thread-row", "data-thread-id", ROW_CONTROLS);
    return held && !held.item.dataset.editing ? held : null;
  }

  function focusAgain(held) {
    const li = itemAgain(ui.threads, ".thread-row", "data-thread-id", held).item;
    const target = li && !li.dataset.editing && li.querySelector("." + (held.control || "thread-item"));
    if (target) {
      if (target !== document.activeElement) target.focus();
    } else if (held.index >= 0) {
      ui.newThread.focus();  // no row left to hold it
    }
  }

  /* The rows being renamed or asked about, by thread id. */
  function editingRows() {
    const rows = new Map();
    Array.prototype.forEach.call(ui.threads.children, function (li) {
      if (li.dataset.editing) rows.set(li.getAttribute("data-thread-id"), li);
    });
    return rows;
  }

  /* Makes the list's children ``rows``, in order, without moving a row that stays: a row moved
   * out of the document and back would lose the focus of its input. */
  function draw(rows) {
    Array.prototype.slice.call(ui.threads.children).forEach(function (child) {
      if (rows.indexOf(child) < 0) ui.threads.removeChild(child);
    });
    let at = ui.threads.firstChild;
    rows.forEach(function (r) {
      if (r === at) at = at.nextSibling;
      else ui.threads.insertBefore(r, at);
    });
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

/* A notification record's controls, by class. */
const NOTIF_CONTROLS = ["notif-thread", "notif-read", "notif-dismiss"];

/* notifications(ui, {where() -> {agentId, threadId}}) -> {load(), toggle(open), isOpen()}. The
 * badge and the panel's heading both count the unread records (pending or delivered). The list is
 * drawn again every 15 s, when a notification arrives and after each action; the focus stays where
 * it was (see ``focusAgain``). */
export function notifications(ui, actions) {
  function post(url, body) {
    return api("POST", url, body).then(load);
  }

  function threadLink(r) {
    const a = el("a", "notif-thread", "Open thread");
    a.href = "#/agents/" + encodeURIComponent(r.agentId) + "/threads/" + encodeURIComponent(r.threadId);
    a.setAttribute("aria-label", "Open thread: " + r.summary);
    return a;
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
    const when = el("time", "notif-time muted", new Date(r.createdAt).toLocaleString());
    when.setAttribute("datetime", r.createdAt);
    li.appendChild(when);
    const row = el("div", "card-actions");
    row.appendChild(threadLink(r));
    if (r.status === "pending" || r.status === "delivered") {
      const read = el("button", "link-btn notif-read", "Mark read");
      read.type = "button";
      read.addEventListener("click", function () { post("/chat/api/notifications/" + encodeURIComponent(r.id) + "/read"); });
      row.appendChild(read);
    }
    const dismiss = el("button", "link-btn notif-dismiss", "Dismiss");
    dismiss.type = "button";
    dismiss.addEventListener("click", function () { post("/chat/api/notifications/" + encodeURIComponent(r.id) + "/dismiss"); });
    row.appendChild(dismiss);
    li.appendChild(row);
    return li;
  }

  /* The focus back in the list drawn again: on the same control of the same record; else on its
   * Dismiss (Mark read is gone once read); a record gone (dismissed), on the record now in its
   * place, or the last; no record left, on Close. */
  function focusAgain(held) {
    const again = itemAgain(ui.notifList, ".notif", "data-record-id", held);
    const li = again.item;
    const target = li && ((again.same && held.control && li.querySelector("." + held.control))
                          || li.querySelector(".notif-dismiss"));
    (target || ui.notifClose).focus();
  }

  function load() {
    api("GET", "/chat/api/notifications").then(function (data) {
      const held = focusIn(ui.notifList, ".notif", "data-record-id", NOTIF_CONTROLS);
      const unread = data.unread || 0;
      ui.notifCount.hidden = unread === 0;
      ui.notifCount.textContent = String(unread);
      ui.notifToggle.setAttribute("aria-label", unread ? "Notifications, " + unread + " unread" : "Notifications");
      ui.notifPending.textContent = unread + " unread";
      ui.notifReadAll.disabled = unread === 0;
      clear(ui.notifList);
      (data.records || []).forEach(function (r) { ui.notifList.appendChild(record(r)); });
      if (!(data.records || []).length) ui.notifList.appendChild(el("li", "muted empty", "Nothing here"));
      if (held) focusAgain(held);
    }).catch(function () {});
  }

  function toggle(open) {
    ui.notifPanel.hidden = !open;
    ui.notifToggle.setAttribute("aria-expanded", String(open));
    if (open) load();
  }

  ui.notifToggle.addEventListener("click", function () { toggle(ui.notifPanel.hidden); });
  ui.notifClose.addEventListener("click", function () { toggle(false); ui.notifToggle.focus(); });
  ui.notifReadAll.addEventListener("click", function () { post("/chat/api/notifications/read-all"); });
  ui.notifTest.addEventListener("click", function () {
    const where = actions.where();
    ui.notifTest.disabled = true;
    post("/chat/api/notifications/test", { agentId: where.agentId, threadId: where.threadId })
      .catch(function () {})
      .then(function () { ui.notifTest.disabled = false; });
  });
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
