// A chat's unfinished run, drawn in place under what it got so far: calls waiting for a
// person's approval (each with its tool, its arguments as text, a reason, Approve / Reject),
// a run cut off or failed (Resume or Retry, Keep as is), or one another server is answering.
// Tool names, arguments and error text come from the model or the server: text only.

import { chatIdProblem, send, validChatId } from "./api.js";
import { t } from "./i18n.js";
import { AnswerView, el, prettyJSON, renderEntries } from "./render.js";

function button(label, testid, onClick, className) {
  const b = el("button", className, label);
  b.type = "button";
  b.dataset.testid = testid;
  b.addEventListener("click", onClick);
  return b;
}

// Tools a person allowed for good in a chat ("Always allow NAME in this chat" ticked on an
// Approve), in this tab only, as 0.9.119's page: a reload asks again. A later call of such a
// tool in that chat is approved without a card, once per call (a refused decision is shown).
const allowed = new Map(); // chat id -> Set of tool names
const autoApproved = new Set(); // "run id/call id" decided here already

function renderApprovals(answer, p, hooks) {
  // a run parked until a person decides; Stop rejects every waiting call
  const waiting = (p.approvals || []).filter((a) => !a.decision);
  const chatAllows = allowed.get(hooks.chatId());
  const status = el("div", "pending approval");
  status.dataset.testid = "pending";
  status.append(el("div", "pending-what", waiting.length === 1
    ? t("approval.waitsOne") : t("approval.waitsMany", { n: waiting.length })));
  for (const a of waiting) {
    const drawn = answer.tools.get(a.call_id);
    if (drawn) drawn.state.textContent = t("approval.waiting");
    const card = el("div", "approval-card");
    card.dataset.testid = "approval";
    card.dataset.digest = a.digest || "";
    const head = el("div", "approval-head");
    head.append(el("span", "tool-name", a.tool_name), el("span", "tool-state", t("approval.needed")));
    const args = el("pre", "tool-args", prettyJSON(a.arguments || "{}"));
    args.dataset.testid = "approval-args";
    const reason = el("input", "approval-reason");
    reason.type = "text";
    reason.maxLength = 2000;
    reason.placeholder = t("approval.reason");
    reason.setAttribute("aria-label", t("approval.reason"));
    reason.dataset.testid = "approval-reason";
    // the call's id comes from the provider (or the model): one the page cannot put in a
    // URL leaves the card readable, its buttons off, and Stop (below) to reject it
    const problem = chatIdProblem(a.call_id, "tool call id");
    const decide = (approve) => hooks.resume({
      before: () => send("POST", "api/chat/approve", {
        // the run and the call's digest (its tool and arguments) bind the decision to what
        // this card shows: if the call changed meanwhile the server refuses it (409)
        session_id: hooks.chatId(), call_id: a.call_id, run_id: p.run_id, digest: a.digest || null,
        decision: approve ? "approve" : "deny", reason: reason.value.trim() || null,
      }),
    });
    const always = el("input");
    always.type = "checkbox";
    always.dataset.testid = "approval-always";
    const alwaysLabel = el("label", "approval-always");
    alwaysLabel.append(always, ` ${t("approval.always", { name: a.tool_name })}`);
    const approve = () => {
      if (always.checked) {
        const chatId = hooks.chatId();
        if (!allowed.has(chatId)) allowed.set(chatId, new Set());
        allowed.get(chatId).add(a.tool_name);
      }
      decide(true);
    };
    const actions = el("div", "actions");
    actions.append(
      button(t("approval.approve"), "approve", approve, "small primary"),
      button(t("approval.reject"), "reject", () => decide(false), "small danger"),
    );
    if (problem) {
      for (const b of actions.children) { b.disabled = true; b.title = t("approval.useStop", { problem }); }
      always.disabled = true;
    }
    card.append(head, el("div", "label", t("approval.arguments")), args, reason, alwaysLabel, actions);
    status.append(card);
    const key = `${p.run_id}/${a.call_id}`;
    if (!problem && chatAllows && chatAllows.has(a.tool_name) && !autoApproved.has(key)) {
      autoApproved.add(key);
      card.hidden = true;
      status.append(el("div", "note", t("approval.auto", { name: a.tool_name })));
      setTimeout(() => decide(true), 0); // once the chat is drawn
      break; // one decision resumes the run; the next call (if any) is drawn again after it
    }
  }
  const actions = el("div", "actions");
  actions.append(button(t("approval.stopAll"), "stop-pending", hooks.stop, "small"));
  status.append(actions);
  answer.body.append(status);
}

// The unfinished run, in place: what it got so far, why it stopped, what can be done.
export function renderPending(box, p, hooks) {
  const exchanges = renderEntries(box, p.entries, {});
  let x = exchanges[exchanges.length - 1];
  if (!x) { x = { user: null, answer: null }; exchanges.push(x); }
  if (!x.answer) x.answer = new AnswerView(box);
  for (const e of exchanges) {
    if (e.user) e.user.classList.add("unfinished");
    if (e.answer) e.answer.node.classList.add("unfinished");
  }
  const answer = x.answer;
  if (p.awaiting_approval) {
    renderApprovals(answer, p, hooks);
    return exchanges;
  }
  answer.node.classList.add(`ended-${p.status}`);
  const status = el("div", `pending ${p.status}`);
  status.dataset.testid = "pending";
  const error = p.error || {};
  // an error a retry can fix (a 503, a dropped connection) leaves the run "interrupted", as a
  // shutdown does: the user reads the error when there is one
  const failed = p.status === "failed";
  const what = failed
    ? (error.message ? t("pending.failedWith", { error: error.message }) : t("pending.failed"))
    : t("pending.unfinished", { status: p.status, error: error.message || t("pending.stopped") });
  status.append(el("div", "pending-what", what));
  if (error.hint) {
    const hint = el("div", "pending-hint", t("pending.fix", { hint: error.hint }));
    hint.dataset.testid = "pending-hint";
    status.append(hint);
  }
  const actions = el("div", "actions");
  if (p.can_retry) {
    actions.append(button(failed ? t("pending.retry") : t("pending.resume"), "resume",
      () => hooks.resume(), "small"));
  }
  actions.append(button(t("pending.keep"), "discard", hooks.stop, "small"));
  status.append(actions);
  answer.body.append(status);
  return exchanges;
}

// Another server (sharing this database) is answering: what it has saved so far.
export function renderElsewhere(box, p, hooks) {
  const exchanges = p ? renderEntries(box, p.entries, {}) : [];
  let x = exchanges[exchanges.length - 1];
  if (!x || !x.answer) { x = { answer: new AnswerView(box) }; }
  x.answer.node.classList.add("unfinished");
  const status = el("div", "pending elsewhere");
  status.dataset.testid = "busy-elsewhere";
  status.append(el("div", "pending-what", t("pending.elsewhere")));
  const actions = el("div", "actions");
  actions.append(button(t("pending.reload"), "reload", hooks.reload, "small"));
  status.append(actions);
  x.answer.body.append(status);
}

// What the start-up notice says of other chats' unfinished runs (this chat's shows in place):
// how many wait for approval, were cut off or failed, and up to three to open; null if none.
export function resumableSummary(runs, current) {
  const elsewhere = runs.filter(
    (r) => r.session_id !== current && validChatId(r.session_id) && !r.busy_elsewhere);
  if (!elsewhere.length) return null;
  const failed = elsewhere.filter((r) => r.status === "failed").length;
  const waiting = elsewhere.filter((r) => r.awaiting_approval).length;
  const cut = elsewhere.length - failed - waiting;
  const parts = [];
  if (waiting) parts.push(t("resumable.waiting", { n: waiting }));
  if (cut) parts.push(t("resumable.cut", { n: cut }));
  if (failed) parts.push(t("resumable.failed", { n: failed }));
  const chats = elsewhere.slice(0, 3).map((r) => ({
    id: r.session_id,
    label: t("resumable.open", { title: (r.title || r.session_id).slice(0, 30),
      status: r.awaiting_approval ? t("approval.needed") : r.status }),
  }));
  return { text: `${parts.join(t("resumable.join"))}.`, chats };
}
