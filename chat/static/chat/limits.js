/* Budget and limit refusals as the chat page shows them (docs/chat.md, docs/operations.md): a card
 * under the turn that names the budget or limit, not a generic failure; a soft budget's notice. */

const TITLES = {
  budget_exceeded: "Budget reached",
  too_many_active_runs: "Too many active runs",
};

/* The card of a run that ended on a refusal ({text, cls, retry}), or null for any other error.
 * A run refused for the active-run limit may be sent again once another ends; a spent budget not
 * before its reset (the message says when). */
export function refusalCard(code, message) {
  const title = TITLES[code];
  if (!title) return null;
  return { text: title + ": " + (message || code), cls: "limit-card", retry: code === "too_many_active_runs" };
}

/* The line of a soft budget's notice (a data-budget-notice chunk, or its stored entry). */
export function budgetNoticeText(notice) {
  return (notice && notice.message) || "A budget is spent.";
}
