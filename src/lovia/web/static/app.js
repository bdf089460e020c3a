// The chat page: sidebar of chats, the open chat, the composer. State lives on the server;
// the page only renders it and follows the live run (after a reload too: #chat=<id>).
//
// The page's own controls are looked up once, here, before any model output is on the page,
// and used through these references only: markup in an answer (already stripped of ids,
// names and form controls by the sanitizer) can never stand in for them.

import {
  ApiError, chatIdProblem, chatPath, follow, getJSON, idSegment, postOnly, send, stream,
  validChatId,
} from "./api.js";
import { AnswerView, el, prettyJSON, renderEntries, userBubble, visible } from "./render.js";

const byId = (id) => document.getElementById(id);
const ui = Object.freeze({
  menu: byId("menu"),
  agentName: byId("agent-name"),
  demoBadge: byId("demo-badge"),
  newChat: byId("new-chat"),
  chatList: byId("chat-list"),
  notices: byId("notices"),
  messages: byId("messages"),
  composer: byId("composer"),
  input: byId("input"),
  send: byId("send"),
  stop: byId("stop"),
});
const PLACEHOLDER = ui.input.placeholder;

const state = {
  chatId: null,
  live: false,
  agent: null,
  source: null,
  setup: null, // { message, hint, blocking } when the model cannot (or may not) be used
  answer: null,
  exchanges: [], // what render() drew: [{ user, answer, index }]
  regenerate: null, // the Regenerate button, under the last answer
  joining: new Map(), // mailbox token -> bubble of a message sent into the live run
  generation: 0, // bumps on every chat switch, so a stale stream stops drawing
};

function chatFromHash() {
  const match = /chat=([^&]*)/.exec(location.hash);
  if (!match) return null;
  let id = null;
  try { id = decodeURIComponent(match[1]); } catch (_) { return null; }
  return validChatId(id) ? id : null;
}

function blocked() {
  return Boolean(state.setup && state.setup.blocking);
}

function setLive(live) {
  state.live = live;
  ui.send.hidden = live;
  ui.stop.hidden = !live;
  ui.input.disabled = blocked();
  ui.send.disabled = blocked();
  ui.input.placeholder = blocked()
    ? `Sending is disabled: ${state.setup.message}. To fix: ${state.setup.hint || "see the server log"}`
    : live ? "Type your next message: Enter sends it into this answer" : PLACEHOLDER;
  document.body.classList.toggle("running", live);
  for (const x of state.exchanges) {
    for (const b of x.buttons || []) b.disabled = live;
  }
  if (state.regenerate) state.regenerate.disabled = live;
}

function notice(text, className = "info", actions = []) {
  const box = el("div", `notice ${className}`);
  box.append(el("span", null, text));
  for (const [label, fn, testid] of actions) {
    const b = el("button", "small", label);
    b.type = "button";
    if (testid) b.dataset.testid = testid;
    b.addEventListener("click", fn);
    box.append(b);
  }
  ui.notices.append(box);
  return box;
}

function errorText(err) {
  return err instanceof ApiError && err.hint ? `${err.message} (${err.hint})` : String(err.message || err);
}

function showError(err) {
  notice(errorText(err), "error").dataset.testid = "error";
}

function showSetup() {
  const s = state.setup;
  if (!s) return;
  const text = s.blocking
    ? `The model cannot be used: ${s.message}. To fix: ${s.hint || "see the server log"}.`
    : `Warning: ${s.message}. ${s.hint || ""}`;
  notice(text, s.blocking ? "error" : "warn").dataset.testid = s.blocking ? "setup-hint" : "setup-warning";
}

// -- sidebar ------------------------------------------------------------------------------

async function refreshChats() {
  const chats = await getJSON("/api/chats");
  ui.chatList.replaceChildren();
  for (const chat of chats) {
    const item = el("li", chat.id === state.chatId ? "active" : "");
    item.dataset.testid = "chat-item";
    const problem = chatIdProblem(chat.id);
    const usable = problem === null;
    const open = el("button", "chat-open", chat.title || "New chat");
    open.type = "button";
    // the id a program stored it under: text, like every other label, with invisible or
    // direction-changing characters shown as escapes (it must not pass for another id)
    open.title = visible(chat.id);
    if (usable) open.addEventListener("click", () => openChat(chat.id).catch(showError));
    else { open.disabled = true; open.title = `${problem}: it cannot be opened here`; }
    item.append(open);
    if (chat.live) item.append(el("span", "badge live", "running"));
    else if (chat.pending) {
      item.append(el("span", "badge warn",
        chat.pending.awaiting_approval ? "needs approval" : chat.pending.status));
    }
    if (usable) {
      const del = el("button", "icon small", "×");
      del.type = "button";
      del.title = "Delete chat";
      del.dataset.testid = "delete-chat";
      del.addEventListener("click", async () => {
        if (!confirm("Delete this chat?")) return;
        try {
          await send("DELETE", chatPath(chat.id));
          if (chat.id === state.chatId) await newChat();
          await refreshChats();
        } catch (err) { showError(err); }
      });
      item.append(del);
    }
    ui.chatList.append(item);
  }
}

// -- one chat -----------------------------------------------------------------------------

async function newChat() {
  const { id } = await send("POST", "/api/chats", {});
  await openChat(id, { fresh: true });
}

async function openChat(chatId, { fresh = false } = {}) {
  const problem = chatIdProblem(chatId);
  if (problem) throw new Error(`${problem}: this chat cannot be opened here`);
  state.generation += 1;
  if (state.source) { state.source.close(); state.source = null; }
  state.chatId = chatId;
  history.replaceState(null, "", `#chat=${encodeURIComponent(chatId)}`);
  document.body.classList.remove("menu-open");
  ui.notices.replaceChildren();
  ui.messages.replaceChildren();
  state.exchanges = [];
  state.regenerate = null;
  state.joining = new Map();
  setLive(false);
  showSetup();
  if (fresh) { await refreshChats(); return; }
  let detail;
  try {
    detail = await getJSON(chatPath(chatId));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) { await refreshChats(); return; }
    throw err;
  }
  render(detail);
  await refreshChats();
}

function button(label, testid, onClick, className = "link") {
  const b = el("button", className, label);
  b.type = "button";
  b.dataset.testid = testid;
  b.addEventListener("click", onClick);
  return b;
}


// Stop the chat's unfinished run (calls waiting for approval are rejected), then show the chat.
async function stopPending() {
  try {
    await send("POST", chatPath(state.chatId, "/stop"));
    await openChat(state.chatId);
  } catch (err) { showError(err); }
}

function renderApprovals(answer, p) {
  // a run parked until a person decides: each waiting call with its tool, its arguments
  // (untrusted: text only) and Approve / Reject; Stop rejects them all
  const waiting = (p.approvals || []).filter((a) => !a.decision);
  const status = el("div", "pending approval");
  status.dataset.testid = "pending";
  status.append(el("div", "pending-what", waiting.length === 1
    ? "This answer waits for your approval of a tool call."
    : `This answer waits for your approval of ${waiting.length} tool calls.`));
  for (const a of waiting) {
    const drawn = answer.tools.get(a.call_id);
    if (drawn) drawn.state.textContent = "waiting for approval";
    const card = el("div", "approval-card");
    card.dataset.testid = "approval";
    const head = el("div", "approval-head");
    head.append(el("span", "tool-name", a.tool_name), el("span", "tool-state", "needs approval"));
    const args = el("pre", "tool-args", prettyJSON(a.arguments || "{}"));
    args.dataset.testid = "approval-args";
    const reason = el("input", "approval-reason");
    reason.type = "text";
    reason.maxLength = 2000;
    reason.placeholder = "Reason (optional, shown to the model if you reject)";
    reason.dataset.testid = "approval-reason";
    // the call's id comes from the provider (or the model): one the page cannot put in a
    // URL leaves the card readable, its buttons off, and Stop (below) to reject it
    const problem = chatIdProblem(a.call_id, "tool call id");
    const path = problem ? null : chatPath(state.chatId, `/approvals/${idSegment(a.call_id)}`);
    const decide = (approve) => run(path, { approve, reason: reason.value.trim() || null }, null);
    const actions = el("div", "actions");
    actions.append(
      button("Approve", "approve", () => decide(true), "small primary"),
      button("Reject", "reject", () => decide(false), "small danger"),
    );
    if (problem) {
      for (const b of actions.children) { b.disabled = true; b.title = `${problem}: use Stop`; }
    }
    card.append(head, el("div", "label", "Arguments"), args, reason, actions);
    status.append(card);
  }
  const actions = el("div", "actions");
  actions.append(button("Stop (reject all)", "stop-pending", stopPending, "small"));
  status.append(actions);
  answer.body.append(status);
}

function renderPending(box, p) {
  // the unfinished run, in place: what it got so far, why it stopped, what can be done
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
    renderApprovals(answer, p);
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
    ? `This answer failed${error.message ? `: ${error.message}` : "."}`
    : `This answer did not finish (${p.status}): ${error.message || "the server stopped before it was done."}`;
  status.append(el("div", "pending-what", what));
  if (error.hint) {
    const hint = el("div", "pending-hint", `To fix: ${error.hint}`);
    hint.dataset.testid = "pending-hint";
    status.append(hint);
  }
  const actions = el("div", "actions");
  if (p.can_retry) {
    const label = failed ? "Retry" : "Resume";
    actions.append(button(label, "resume", () => run(chatPath(state.chatId, "/resume"), {}, null), "small"));
  }
  actions.append(button("Keep as is", "discard", stopPending, "small"));
  status.append(actions);
  answer.body.append(status);
  return exchanges;
}

function renderElsewhere(box, p) {
  // another server (sharing this database) is answering: show what it has saved so far
  const exchanges = p ? renderEntries(box, p.entries, {}) : [];
  let x = exchanges[exchanges.length - 1];
  if (!x || !x.answer) { x = { answer: new AnswerView(box) }; }
  x.answer.node.classList.add("unfinished");
  const status = el("div", "pending elsewhere");
  status.dataset.testid = "busy-elsewhere";
  status.append(el("div", "pending-what",
    "Another server sharing this database is answering this chat right now."));
  const actions = el("div", "actions");
  actions.append(button("Reload", "reload", () => openChat(state.chatId).catch(showError), "small"));
  status.append(actions);
  x.answer.body.append(status);
}

function render(detail) {
  const box = ui.messages;
  box.replaceChildren();
  const editable = detail.live ? null : editMessage;
  state.exchanges = renderEntries(box, detail.entries, { onEdit: editable });
  state.regenerate = null;
  if (detail.busy_elsewhere && !detail.live) {
    renderElsewhere(box, detail.pending);
  } else if (detail.pending && !detail.live) {
    renderPending(box, detail.pending);
  } else if (!detail.live) {
    const last = state.exchanges[state.exchanges.length - 1];
    if (last && last.user) {
      // Regenerate belongs to the last answer, whatever it was (even an empty stopped one)
      if (!last.answer) last.answer = new AnswerView(box);
      state.regenerate = button("Regenerate", "regenerate", () => regenerate());
      last.answer.actions.append(state.regenerate);
    }
  }
  for (const x of state.exchanges) {
    x.buttons = x.user ? [...x.user.querySelectorAll("button")] : [];
  }
  if (detail.live) {
    if (detail.live.input) userBubble(box, detail.live.input);
    state.answer = new AnswerView(box);
    setLive(true);
    const generation = state.generation;
    state.source = follow(state.chatId, 0, (event) => {
      if (generation === state.generation) onEvent(event);
    });
  }
  scrollDown();
}

function scrollDown() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function onEvent(event) {
  const answer = state.answer;
  if (!answer) return;
  switch (event.type) {
    case "text_delta": answer.addText(event.delta); break;
    case "reasoning_delta": break;
    case "message_completed":
      answer.endText();
      for (const e of event.entries) if (e.type === "reasoning") answer.addReasoning(e.content);
      break;
    case "tool_call_started": answer.addToolCall(event.call); break;
    case "tool_call_completed": answer.addToolResult(event.call.call_id, event.output, event.is_error); break;
    case "user_message_queued": {
      const node = userBubble(ui.messages, contentText(event.content));
      node.classList.add("queued");
      node.dataset.testid = "queued-message";
      node.append(el("div", "note muted", "(sent: the answer reads it at its next step)"));
      state.joining.set(event.token, node);
      break;
    }
    case "user_message_injected": {
      // the run read it: it becomes part of this answer, which goes on below it
      let node = state.joining.get(event.token);
      state.joining.delete(event.token);
      if (!node) node = userBubble(ui.messages, contentText(event.content));
      node.classList.remove("queued");
      node.dataset.testid = "user-message";
      for (const n of node.querySelectorAll(".note")) n.remove();
      answer.endText();
      ui.messages.append(node);
      state.answer = new AnswerView(ui.messages);
      for (const waiting of state.joining.values()) ui.messages.append(waiting);
      break;
    }
    case "handoff": answer.note(`handed off to ${event.to_agent}`); break;
    case "context_compacted": answer.note(event.text || "earlier context was compacted", "muted"); break;
    case "run_failed":
      if (event.stopped) answer.mark("stopped");
      else if (event.error && event.error.type === "ApprovalPending") answer.note("waiting for your approval", "muted");
      else answer.note(`Failed: ${event.error.message}`, "error");
      finish();
      break;
    case "run_completed":
    case "follow_closed":
      finish();
      break;
    default: break;
  }
  scrollDown();
}

async function finish() {
  state.answer = null;
  if (state.source) { state.source.close(); state.source = null; }
  setLive(false);
  await openChat(state.chatId);
}

// Start a run (message, edit, regenerate, resume) and draw its events as they come.
// Nothing on the page is removed until the server has accepted the request.
async function run(path, body, userText, { cut = null } = {}) {
  if (state.live) return;
  const generation = state.generation;
  const box = ui.messages;
  ui.notices.replaceChildren();
  showSetup();
  state.answer = new AnswerView(box);
  state.answer.node.hidden = true;
  let accepted = false;
  const accept = () => {
    if (accepted) return;
    accepted = true;
    if (cut) cut();
    if (userText) box.insertBefore(userBubble(document.createDocumentFragment(), userText), state.answer.node);
    state.answer.node.hidden = false;
  };
  setLive(true);
  try {
    await stream(path, body, (event) => {
      if (generation !== state.generation) return;
      accept();
      onEvent(event);
    });
  } catch (err) {
    if (generation !== state.generation) return;
    setLive(false);
    state.answer = null;
    await openChat(state.chatId);
    if (!accepted && userText && !ui.input.value.trim()) {
      ui.input.value = userText; // refused: the message is back in the composer, not lost
    }
    showError(err);
    return;
  }
  if (generation === state.generation && state.live) await finish();
}

async function sendMessage(text) {
  if (!state.chatId) {
    const { id } = await send("POST", "/api/chats", {});
    state.chatId = id;
    history.replaceState(null, "", `#chat=${encodeURIComponent(id)}`);
  }
  setTimeout(() => refreshChats().catch(() => {}), 300);
  await run(chatPath(state.chatId, "/messages"), { content: text, agent: state.agent }, text);
}

function cutFrom(exchange) {
  // remove this exchange and everything after it (the nodes render() drew)
  return () => {
    const start = exchange.user || (exchange.answer && exchange.answer.node);
    if (!start || start.parentNode !== ui.messages) return;
    while (start.nextSibling && start.nextSibling !== state.answer?.node) start.nextSibling.remove();
    start.remove();
  };
}

async function editMessage(index, text) {
  const exchange = state.exchanges.find((x) => x.index === index);
  await run(chatPath(state.chatId, "/edit"), { index, content: text, agent: state.agent }, text,
    { cut: exchange ? cutFrom(exchange) : null });
}

async function regenerate() {
  const last = state.exchanges[state.exchanges.length - 1];
  const cut = () => { if (last && last.answer) last.answer.node.remove(); };
  await run(chatPath(state.chatId, "/regenerate"), {}, null, { cut });
}

async function stop() {
  try {
    await send("POST", chatPath(state.chatId, "/stop"));
  } catch (err) { showError(err); }
}

// -- start --------------------------------------------------------------------------------

function contentText(content) {
  return typeof content === "string" ? content
    : Array.isArray(content) ? content.map((p) => (p && p.text) || "").join("") : "";
}

async function joinRun(text) {
  // the live run reads it at its next step; its bubble comes with the run's events
  const chatId = state.chatId;
  try {
    const headers = await postOnly(chatPath(chatId, "/messages"), { content: text, agent: state.agent });
    if (!headers.get("X-Lovia-Joined") && chatId === state.chatId && !state.live) {
      await openChat(chatId); // the run ended meanwhile: the message started a new one
    }
  } catch (err) {
    if (!ui.input.value.trim()) ui.input.value = text; // refused: back in the composer
    showError(err);
  }
}

function submit() {
  const text = ui.input.value.trim();
  if (!text || blocked()) return;
  ui.input.value = "";
  if (state.live) {
    joinRun(text);
    return;
  }
  sendMessage(text).catch(showError);
}

async function start() {
  const health = await getJSON("/api/health");
  state.setup = health.setup_problem || null;
  const first = health.agents[0];
  if (first) {
    state.agent = first.name;
    ui.agentName.textContent = first.name;
    ui.demoBadge.hidden = !first.demo;
  }
  ui.composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    submit();
  });
  ui.input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      submit();
    }
  });
  ui.stop.addEventListener("click", stop);
  ui.newChat.addEventListener("click", () => newChat().catch(showError));
  ui.menu.addEventListener("click", () => document.body.classList.toggle("menu-open"));
  const wanted = chatFromHash();
  if (wanted) await openChat(wanted);
  else await newChat();
  const resumable = await getJSON("/api/runs/resumable");
  const elsewhere = resumable.filter(
    (r) => r.chat_id !== state.chatId && validChatId(r.chat_id) && !r.busy_elsewhere);
  if (elsewhere.length) {
    const failed = elsewhere.filter((r) => r.status === "failed").length;
    const waiting = elsewhere.filter((r) => r.awaiting_approval).length;
    const cut = elsewhere.length - failed - waiting;
    const parts = [];
    if (waiting) parts.push(`${waiting} answer(s) wait for your approval`);
    if (cut) parts.push(`${cut} answer(s) were cut off (for example by a server restart)`);
    if (failed) parts.push(`${failed} answer(s) failed`);
    notice(`${parts.join("; ")}.`, "warn",
      elsewhere.slice(0, 3).map((r) => [`Open “${(r.title || r.chat_id).slice(0, 30)}” (${r.awaiting_approval ? "needs approval" : r.status})`, () => openChat(r.chat_id).catch(showError), "open-resumable"]),
    ).dataset.testid = "resumable";
  }
  document.body.dataset.ready = "true";
}

start().catch(showError);
