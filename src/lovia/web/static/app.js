// The chat page: sidebar of chats, the open chat, the composer. State lives on the server;
// the page only renders it and follows the live run (after a reload too: #chat=<id>).

import { ApiError, follow, getJSON, send, stream } from "./api.js";
import { AnswerView, el, renderEntries, userBubble } from "./render.js";

const $ = (id) => document.getElementById(id);
const state = {
  chatId: null,
  live: false,
  agent: null,
  source: null,
  setupHint: null,
  answer: null,
  generation: 0, // bumps on every chat switch, so a stale stream stops drawing
};

function chatFromHash() {
  const match = /chat=([A-Za-z0-9_.:-]+)/.exec(location.hash);
  return match ? match[1] : null;
}

function setLive(live) {
  state.live = live;
  $("send").hidden = live;
  $("stop").hidden = !live;
  $("input").disabled = Boolean(state.setupHint);
  $("send").disabled = Boolean(state.setupHint);
  document.body.classList.toggle("running", live);
  for (const b of document.querySelectorAll("[data-testid=edit], [data-testid=regenerate]")) {
    b.disabled = live;
  }
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
  $("notices").append(box);
  return box;
}

function showError(err) {
  const text = err instanceof ApiError && err.hint ? `${err.message} (${err.hint})` : String(err.message || err);
  notice(text, "error").dataset.testid = "error";
}

// -- sidebar ------------------------------------------------------------------------------

async function refreshChats() {
  const chats = await getJSON("/api/chats");
  const list = $("chat-list");
  list.replaceChildren();
  for (const chat of chats) {
    const item = el("li", chat.id === state.chatId ? "active" : "");
    item.dataset.testid = "chat-item";
    const open = el("button", "chat-open", chat.title || "New chat");
    open.type = "button";
    open.addEventListener("click", () => openChat(chat.id));
    item.append(open);
    if (chat.live) item.append(el("span", "badge live", "running"));
    else if (chat.pending) item.append(el("span", "badge warn", chat.pending.status));
    const del = el("button", "icon small", "×");
    del.type = "button";
    del.title = "Delete chat";
    del.addEventListener("click", async () => {
      if (!confirm("Delete this chat?")) return;
      try {
        await send("DELETE", `/api/chats/${chat.id}`);
        if (chat.id === state.chatId) await newChat();
        await refreshChats();
      } catch (err) { showError(err); }
    });
    item.append(del);
    list.append(item);
  }
}

// -- one chat -----------------------------------------------------------------------------

async function newChat() {
  const { id } = await send("POST", "/api/chats", {});
  await openChat(id, { fresh: true });
}

async function openChat(chatId, { fresh = false } = {}) {
  state.generation += 1;
  if (state.source) { state.source.close(); state.source = null; }
  state.chatId = chatId;
  history.replaceState(null, "", `#chat=${chatId}`);
  document.body.classList.remove("menu-open");
  $("notices").replaceChildren();
  $("messages").replaceChildren();
  setLive(false);
  if (state.setupHint) notice(`No model configured: ${state.setupHint}.`, "error").dataset.testid = "setup-hint";
  if (fresh) { await refreshChats(); return; }
  let detail;
  try {
    detail = await getJSON(`/api/chats/${chatId}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) { await refreshChats(); return; }
    throw err;
  }
  render(detail);
  await refreshChats();
}

function render(detail) {
  const box = $("messages");
  box.replaceChildren();
  const answers = renderEntries(box, detail.entries, { onEdit: detail.live ? null : editMessage });
  if (detail.pending && !detail.live) {
    const p = detail.pending;
    renderEntries(box, p.entries, {}).forEach((a) => a.node.classList.add("unfinished"));
    const why = p.error && p.error.message ? `: ${p.error.message}` : "";
    notice(`This answer did not finish (${p.status}${why}).`, "warn", [
      ["Resume", () => run(`/api/chats/${state.chatId}/resume`, {}, null), "resume"],
      ["Keep as is", async () => { await send("POST", `/api/chats/${state.chatId}/stop`); await openChat(state.chatId); }, "discard"],
    ]).dataset.testid = "pending";
  } else if (answers.length && !detail.live) {
    const last = answers[answers.length - 1];
    const regen = el("button", "link", "Regenerate");
    regen.type = "button";
    regen.dataset.testid = "regenerate";
    regen.addEventListener("click", () => run(`/api/chats/${state.chatId}/regenerate`, {}, null));
    last.actions.append(regen);
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
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
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
    case "handoff": answer.note(`handed off to ${event.to_agent}`); break;
    case "context_compacted": answer.note(event.notice || "earlier context was compacted", "muted"); break;
    case "run_failed":
      answer.note(event.stopped ? "Stopped." : `Failed: ${event.error.message}`, event.stopped ? "muted" : "error");
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
async function run(path, body, userText, { clearFrom = null } = {}) {
  if (state.live) return;
  const generation = state.generation;
  const box = $("messages");
  $("notices").replaceChildren();
  if (clearFrom !== null) {
    const bubbles = [...box.querySelectorAll("[data-testid=user-message]")];
    const at = bubbles[clearFrom];
    if (at) { while (at.nextSibling) at.nextSibling.remove(); at.remove(); }
  }
  if (path.endsWith("/regenerate")) {
    const answers = box.querySelectorAll("[data-testid=answer]");
    if (answers.length) answers[answers.length - 1].remove();
  }
  if (userText) userBubble(box, userText);
  state.answer = new AnswerView(box);
  setLive(true);
  scrollDown();
  try {
    await stream(path, body, (event) => {
      if (generation === state.generation) onEvent(event);
    });
  } catch (err) {
    if (generation !== state.generation) return;
    setLive(false);
    state.answer = null;
    await openChat(state.chatId);
    showError(err);
    return;
  }
  if (generation === state.generation && state.live) await finish();
}

async function sendMessage(text) {
  if (!state.chatId) {
    const { id } = await send("POST", "/api/chats", {});
    state.chatId = id;
    history.replaceState(null, "", `#chat=${id}`);
  }
  setTimeout(refreshChats, 300);
  await run(`/api/chats/${state.chatId}/messages`, { content: text, agent: state.agent }, text);
}

async function editMessage(index, text) {
  const bubbles = [...$("messages").querySelectorAll("[data-testid=user-message]")];
  const detail = await getJSON(`/api/chats/${state.chatId}`);
  const users = detail.entries.filter((e) => e.type === "input" && e.role === "user");
  const position = users.findIndex((e) => e.index === index);
  await run(`/api/chats/${state.chatId}/edit`, { index, content: text, agent: state.agent }, text,
    { clearFrom: position >= 0 && position < bubbles.length ? position : null });
}

async function stop() {
  try {
    await send("POST", `/api/chats/${state.chatId}/stop`);
  } catch (err) { showError(err); }
}

// -- start --------------------------------------------------------------------------------

async function start() {
  const health = await getJSON("/api/health");
  state.setupHint = health.setup_hint;
  const first = health.agents[0];
  if (first) {
    state.agent = first.name;
    $("agent-name").textContent = first.name;
    $("demo-badge").hidden = !first.demo;
  }
  $("composer").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = $("input");
    const text = input.value.trim();
    if (!text || state.live || state.setupHint) return;
    input.value = "";
    sendMessage(text).catch(showError);
  });
  $("input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", () => newChat().catch(showError));
  $("menu").addEventListener("click", () => document.body.classList.toggle("menu-open"));
  const wanted = chatFromHash();
  if (wanted) await openChat(wanted);
  else await newChat();
  const resumable = await getJSON("/api/runs/resumable");
  const elsewhere = resumable.filter((r) => r.chat_id !== state.chatId);
  if (elsewhere.length) {
    notice(`${elsewhere.length} run(s) were interrupted (for example by a server restart).`, "warn",
      elsewhere.slice(0, 3).map((r) => [`Open “${(r.title || r.chat_id).slice(0, 30)}”`, () => openChat(r.chat_id), "open-resumable"]),
    ).dataset.testid = "resumable";
  }
  document.body.dataset.ready = "true";
}

start().catch(showError);
