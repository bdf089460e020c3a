// Opening a chat: the sidebar's list, the chat's stored entries drawn (with their buttons:
// edit, regenerate, branch, re-run), its title, agent and usage, and a live run followed.

import { ApiError, chatIdProblem, chatPath, entriesOf, getJSON, newChatId, send, stream } from "./api.js";
import { addAnswerActions, drawExtensionActions } from "./actions.js";
import { ChatList } from "./chatlist.js";
import { t } from "./i18n.js";
import { AnswerView, el, renderEntries, userBubble } from "./render.js";
import { showWelcome } from "./welcome.js";
import { stampChat } from "./footers.js";
import { runRecords } from "./usage.js";
import { branch } from "./exporting.js";
import { addRerunButton, forkBefore } from "./rerun.js";
import { renderElsewhere, renderPending } from "./pending.js";
import { exchangeSignature, showKeptFollowups } from "./followups.js";
import { contentText } from "./live.js";
import { emit } from "./extensions.js";
import { closeView } from "./views.js";
import { q, scrollDown, setLive, showError, showSetup, state, toast, ui } from "./page.js";
import {
  editMessage, finish, onEvent, ownRun, reconnectPath, regenerate, run, sendMessage, waitsOnUser,
} from "./runs.js";

const chatList = new ChatList({ list: ui.chatList, search: ui.chatSearch }, {
  current: () => state.chatId,
  open: (id) => { closeView(); openChat(id).catch(showError); },
  deleted: async (id) => { if (id === state.chatId) await newChat(); },
  changed: (id) => { if (id === state.chatId) showTitle().catch(() => {}); },
  error: showError,
});

export function refreshChats() {
  return chatList.refresh();
}

export async function newChat() {
  await openChat(newChatId(), { fresh: true });
}

export async function openChat(chatId, { fresh = false } = {}) {
  const problem = chatIdProblem(chatId);
  if (problem) throw new Error(`${problem}: this chat cannot be opened here`);
  state.generation += 1;
  if (state.source) { state.source.abort(); state.source = null; }
  const switched = state.chatId !== chatId;
  state.chatId = chatId;
  if (switched) emit("session", { sessionId: fresh ? null : chatId });
  history.replaceState(null, "", `#chat=${encodeURIComponent(chatId)}`);
  document.body.classList.remove("menu-open");
  ui.notices.replaceChildren();
  ui.messages.replaceChildren();
  state.footers = [];
  state.exchanges = [];
  state.regenerate = null;
  state.joining = new Map();
  setLive(false);
  showSetup();
  if (switched || fresh) showChatTitle(""); // the same chat again (a new language) keeps its title
  showOrigin(null);
  if (state.switcher) state.agent = state.switcher.show(state.switcher.current);
  if (state.usage) { state.usage.clear(); showAgent(); }
  state.todos.clear();
  if (fresh) { updateWelcome(); await refreshChats(); return; }
  let detail;
  try {
    detail = await getJSON(chatPath(chatId));
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) { updateWelcome(); await refreshChats(); return; }
    throw err;
  }
  showChatTitle(detail.title);
  showOrigin(detail.origin);
  if (state.switcher && detail.agent) state.agent = state.switcher.show(detail.agent);
  const records = runRecords(chatId);
  if (state.usage) {
    showAgent();
    state.usage.showChat(chatId, records).catch(() => {});
  }
  state.todos.load(chatId).catch(() => {});
  detail.entries = entriesOf(detail.entries);
  state.users = new Map(detail.entries.filter((e) => e.type === "input" && e.role === "user")
    .map((e) => [e.index, { ref: e.ref, text: contentText(e.content) }]));
  render(detail);
  const generation = state.generation;
  stampChat(state.exchanges, records, () => generation === state.generation).catch(() => {});
  updateWelcome();
  await refreshChats();
}

// The top bar names the open chat: its title, or "New chat" (in the page's language) until
// it has one.
function showChatTitle(title) {
  if (title) {
    delete ui.chatTitle.dataset.i18n;
    ui.chatTitle.textContent = title;
  } else {
    ui.chatTitle.dataset.i18n = "chat.untitled";
    ui.chatTitle.textContent = t("chat.untitled");
  }
}

// A chat that came from another (a branch of it, or one its agent started with
// start_session) links back to it; a source since deleted is named, not linked.
function showOrigin(origin) {
  const button = ui.origin;
  if (!button) return; // a page template of the app's own without it
  button.hidden = !origin;
  button.onclick = null;
  if (!origin) return;
  const title = origin.title || t("chat.untitled");
  const spawned = origin.kind === "spawn";
  const key = origin.exists
    ? (spawned ? "origin.startedFrom" : "origin.branchedFrom")
    : (spawned ? "origin.startGone" : "origin.branchGone");
  button.textContent = t(key, { title });
  button.title = button.textContent;
  button.disabled = !origin.exists;
  if (origin.exists) button.onclick = () => openChat(origin.session_id).catch(showError);
}

// The blank chat shows the welcome (title, description, suggested prompts).
export function updateWelcome() {
  const blank = ui.messages.childElementCount === 0;
  showWelcome(ui.welcome, !state.live && blank);
  ui.exportMenu.hidden = blank;
}

export async function showTitle() {
  const chatId = state.chatId;
  const detail = await getJSON(chatPath(chatId));
  if (chatId === state.chatId) showChatTitle(detail.title);
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
    await send("POST", `api/chat/cancel${q(state.chatId)}`);
    await openChat(state.chatId);
  } catch (err) { showError(err); }
}

const pendingHooks = {
  chatId: () => state.chatId,
  resume: (options = {}) => run(reconnectPath(), {}, null, options),
  stop: stopPending,
  reload: () => openChat(state.chatId).catch(showError),
};

function render(detail) {
  const box = ui.messages;
  box.replaceChildren();
  const editable = detail.live ? null : editMessage;
  state.exchanges = renderEntries(box, detail.entries, { onEdit: editable });
  state.regenerate = null;
  if (detail.busy_elsewhere && !detail.live) {
    renderElsewhere(box, detail.pending, pendingHooks);
  } else if (detail.pending && !detail.live) {
    renderPending(box, detail.pending, pendingHooks);
    if (detail.pending.awaiting_approval) waitsOnUser();
  } else if (!detail.live) {
    const last = state.exchanges[state.exchanges.length - 1];
    if (last && last.user) {
      // Regenerate belongs to the last answer, whatever it was (even an empty stopped one)
      if (!last.answer) last.answer = new AnswerView(box);
      state.regenerate = button(t("message.regenerate"), "regenerate", () => regenerate());
      state.regenerate.dataset.action = "regenerate";
      state.regenerate.title = t("message.regenerate");
      last.answer.actions.append(state.regenerate);
      if (state.followups && last.index !== null) {
        showKeptFollowups(last.answer, state.chatId, (text) => { ui.input.value = text; ui.input.focus(); },
          exchangeSignature(last));
      }
    }
  }
  const settled = !detail.live && !detail.pending && !detail.busy_elsewhere;
  state.exchanges.forEach((x, i) => {
    if (!x.answer) return;
    const next = state.exchanges[i + 1];
    const nextUser = next ? state.users.get(next.index) : null;
    // branching copies the chat up to this answer: before the next message, or all of it
    const canBranch = next ? Boolean(nextUser && nextUser.ref) : settled;
    addAnswerActions(x.answer, {
      branch: canBranch ? () => branchFrom(nextUser ? nextUser.ref : null) : null,
    });
    const own = state.users.get(x.index);
    const slot = el("span", "ext-actions");
    x.answer.actions.append(slot);
    const msg = { sessionId: state.chatId, role: "assistant", text: x.answer.source() || "",
      ref: own && own.ref ? own.ref : null };
    state.footers.push({ slot, msg });
    drawExtensionActions(slot, msg, toast);
  });
  for (const x of state.exchanges) {
    const own = x.user && settled ? state.users.get(x.index) : null;
    if (own && own.ref && own.text) addRerunButton(x.user, () => rerunFrom(own));
    x.buttons = x.user ? [...x.user.querySelectorAll("button")] : [];
  }
  if (detail.live) {
    if (detail.live.input) userBubble(box, detail.live.input);
    state.answer = new AnswerView(box);
    setLive(true);
    const generation = state.generation;
    const source = new AbortController();
    state.source = source;
    stream(reconnectPath(), {}, (event) => {
      if (generation !== state.generation) return "stop";
      return onEvent(event);
    }, { signal: source.signal, onRun: ownRun }).then(() => {
      if (generation === state.generation && state.live) finish();
    }).catch(() => {
      if (generation === state.generation && state.live) finish();
    });
  }
  scrollDown();
}

// The open chat's agent: its model by name, and the demo badge when it is the demo.
export function showAgent() {
  if (state.panels) state.panels.update();
  const agent = state.usage.showAgent(state.agent);
  if (agent) ui.demoBadge.hidden = !state.demoAgents.has(agent.name);
}

async function branchFrom(ref) {
  try {
    const made = await branch(state.chatId, ref);
    await openChat(made);
  } catch (err) { showError(err); }
}

// Re-run from a user message: fork the chat before it into a new chat, open that and send
// the message there (rerun.js); this chat stays as it is.
async function rerunFrom(user) {
  if (state.live) return;
  try {
    const made = await forkBefore(state.chatId, user.ref);
    await openChat(made);
    await sendMessage(user.text);
  } catch (err) { showError(err); }
}
