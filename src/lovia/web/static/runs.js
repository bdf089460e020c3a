// Starting a run (a message, an edit, regenerate, resume) and drawing its events as they come;
// a message sent while a run streams joins it; Stop.

import { ApiError, chatPath, getJSON, newChatId, send, stream } from "./api.js";
import { t } from "./i18n.js";
import { AnswerView, userBubble } from "./render.js";
import { exchangeSignature, showFollowups } from "./followups.js";
import { drawEvent } from "./live.js";
import { clientContext, emit } from "./extensions.js";
import { currentView } from "./views.js";
import { blocked, q, scrollDown, setLive, showError, showSetup, state, toast, ui } from "./page.js";
import { openChat, refreshChats, updateWelcome } from "./chat.js";

export function ownRun(runId) {
  if (runId) state.ownRuns.add(runId);
}

export function reconnectPath() {
  return `api/chat/reconnect${q(state.chatId)}`;
}

export function onEvent(event) {
  return drawEvent(event, { state, box: ui.messages, ownRun, finish, scrollDown, showError, waitsOnUser });
}

// A view covers the chat: when the chat starts waiting on the user (an approval, a question), say so.
export function waitsOnUser() {
  if (currentView()) toast(t("view.chatWaits"), "info");
}

export async function finish() {
  state.answer = null;
  if (state.source) { state.source.abort(); state.source = null; }
  setLive(false);
  const stopped = state.stoppedTools || [];
  state.stoppedTools = null;
  const chatId = state.chatId;
  await openChat(chatId);
  // the server drops a stopped call that has no result; this tab still shows what ran
  const last = state.exchanges[state.exchanges.length - 1];
  if (stopped.length && last && last.answer) last.answer.addStoppedCalls(stopped);
  else if (state.followups && last && last.answer && state.regenerate) {
    const generation = state.generation;
    showFollowups(last.answer, chatId, (text) => { ui.input.value = text; ui.input.focus(); },
      () => generation === state.generation && !state.live, exchangeSignature(last));
  }
}

// Start a run (message, edit, regenerate, resume) and draw its events as they come.
// Nothing on the page is removed until the server has accepted the request.
export async function run(path, body, userText, { cut = null, before = null } = {}) {
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
    updateWelcome();
    emit("run-start", { sessionId: state.chatId });
  };
  setLive(true);
  try {
    if (before) await before();
    await stream(path, body, (event) => {
      if (generation !== state.generation) return "stop";
      accept();
      return onEvent(event);
    }, { onRun: ownRun });
  } catch (err) {
    if (generation !== state.generation) return;
    if (accepted) emit("run-end", { sessionId: state.chatId, status: "error", usage: null });
    setLive(false);
    const answer = state.answer;
    state.answer = null;
    const dropped = err instanceof TypeError; // the connection failed or was cut
    if (dropped && !(await reachable())) {
      if (generation !== state.generation) return;
      // the server cannot be reached (stopped, restarting, the network gone): what the page
      // shows stays, a message never taken goes back to the composer, and the error says
      // so; opening the chat again would blank it
      if (accepted) answer.note(t("run.connectionLost"), "error");
      else answer.node.remove();
      if (!accepted && userText && !ui.input.value.trim()) ui.input.value = userText;
      showError(new Error(t("error.unreachable", { error: err.message })));
      return;
    }
    if (generation !== state.generation) return;
    // the chat as the server has it (a run still going is followed again from there)
    await openChat(state.chatId);
    if (err instanceof ApiError && err.code === "run_not_found") return; // it ended already
    if (dropped && accepted) return; // only the connection was lost: the chat shows the run
    if (!accepted && userText && !ui.input.value.trim()) {
      ui.input.value = userText; // refused: the message is back in the composer, not lost
    }
    showError(err);
    return;
  }
  if (generation === state.generation && state.live) await finish();
  const ended = state.runEnd || { status: generation === state.generation ? "done" : "detached", usage: null };
  state.runEnd = null;
  if (accepted) emit("run-end", { sessionId: state.chatId, ...ended });
}

// Whether the server answers at all (an HTTP error is an answer).
async function reachable() {
  try {
    await getJSON("api/info");
    return true;
  } catch (err) {
    return err instanceof ApiError;
  }
}

export async function sendMessage(text) {
  if (!state.chatId) {
    state.chatId = newChatId();
    history.replaceState(null, "", `#chat=${encodeURIComponent(state.chatId)}`);
  }
  setTimeout(() => refreshChats().catch(() => {}), 300);
  const body = { message: text, session_id: state.chatId, agent: state.agent };
  const attached = state.panels ? state.panels.attachments.take() : [];
  if (attached.length) body.attachments = attached;
  const context = clientContext();
  if (context) body.context = context;
  await run("api/chat/stream", body, text);
}

// Rewind the chat to just before the user message at entry `index` (by its ref).
function rewindTo(index) {
  const user = state.users.get(index);
  const where = user && user.ref ? { ref: user.ref } : { user_turn: [...state.users.keys()].filter((i) => i < index).length };
  return () => send("POST", chatPath(state.chatId, "/rewind"), where);
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

export async function editMessage(index, text) {
  const exchange = state.exchanges.find((x) => x.index === index);
  await run("api/chat/stream", { message: text, session_id: state.chatId, agent: state.agent }, text,
    { cut: exchange ? cutFrom(exchange) : null, before: rewindTo(index) });
}

export async function regenerate() {
  const last = state.exchanges[state.exchanges.length - 1];
  const cut = () => { if (last && last.answer) last.answer.node.remove(); };
  const index = Math.max(-1, ...state.users.keys());
  const user = state.users.get(index);
  if (!user) return;
  await run("api/chat/stream", { message: user.text, session_id: state.chatId, agent: state.agent }, null,
    { cut, before: rewindTo(index) });
}

export async function stop() {
  try {
    await send("POST", `api/chat/cancel${q(state.chatId)}`);
  } catch (err) { showError(err); }
}

async function joinRun(text) {
  // the live run reads it at its next step; its bubble comes with the run's events
  const chatId = state.chatId;
  try {
    const joined = await send("POST", "api/chat/inject", { session_id: chatId, message: text });
    if (!joined.accepted && chatId === state.chatId) {
      // the run ended meanwhile (or is not this server's): the message starts a new one
      for (let i = 0; i < 100 && state.live; i += 1) await new Promise((r) => setTimeout(r, 50));
      await sendMessage(text);
    }
  } catch (err) {
    if (!ui.input.value.trim()) ui.input.value = text; // refused: back in the composer
    showError(err);
  }
}

export function submit() {
  const text = ui.input.value.trim();
  if (!text || blocked()) return;
  ui.input.value = "";
  submitText(text);
}

// Send text as the user: into the live run's mailbox while one streams, else a new run.
export function submitText(text) {
  if (blocked()) return;
  if (state.live) {
    joinRun(text);
    return;
  }
  sendMessage(text).catch(showError);
}
