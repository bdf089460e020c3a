// The chat page: sidebar of chats, the open chat, the composer. State lives on the server;
// the page only renders it and follows the live run (after a reload too: #chat=<id>).
//
// The page's own controls are looked up once, here, before any model output is on the page,
// and used through these references only: markup in an answer (already stripped of ids,
// names and form controls by the sanitizer) can never stand in for them.

import {
  ApiError, chatIdProblem, chatPath, entriesOf, getJSON, newChatId, send, stream, validChatId,
} from "./api.js";
import { addAnswerActions, drawExtensionActions } from "./actions.js";
import { AgentSwitcher } from "./agents.js";
import { ChatList } from "./chatlist.js";
import { pageConfig } from "./config.js";
import { currentLang, t } from "./i18n.js";
import { AnswerView, el, renderEntries, userBubble } from "./render.js";
import { setupChrome } from "./chrome.js";
import { showWelcome } from "./welcome.js";
import { followEvents } from "./follow.js";
import { showFollowups } from "./followups.js";
import { askForToken } from "./token.js";
import { TodoPanel } from "./todos.js";
import { UsageView } from "./usage.js";
import { branch, setupExport } from "./exporting.js";
import { addRerunButton, forkBefore } from "./rerun.js";
import { renderElsewhere, renderPending, resumableSummary } from "./pending.js";
import { contentText, drawEvent } from "./live.js";
import { setupPanels } from "./panels.js";
import { clientContext, connect, emit, markReady } from "./extensions.js";
import { closeView, currentView, setupViews } from "./views.js";

const byId = (id) => document.getElementById(id);
const ui = Object.freeze({
  menu: byId("menu"),
  agentName: byId("agent-name"),
  demoBadge: byId("demo-badge"),
  newChat: byId("new-chat"),
  chatList: byId("chat-list"),
  chatSearch: byId("chat-search"),
  agentSwitcher: byId("agent-switcher"),
  exportMenu: byId("export"),
  contextRing: byId("context-ring"),
  modelName: byId("model-name"),
  tokenDialog: byId("token-dialog"),
  todoPanel: byId("todo-panel"),
  tokenForm: byId("token-form"),
  tokenInput: byId("token-input"),
  chatTitle: byId("chat-title"),
  pageTitle: byId("page-title"),
  welcome: byId("welcome"),
  welcomeTitle: byId("welcome-title"),
  welcomeDescription: byId("welcome-description"),
  welcomeExamples: byId("welcome-examples"),
  themeToggle: byId("theme-toggle"),
  langToggle: byId("lang-toggle"),
  notices: byId("notices"),
  messages: byId("messages"),
  composer: byId("composer"),
  input: byId("input"),
  send: byId("send"),
  stop: byId("stop"),
  panels: {
    schedules: byId("schedules-btn"), memory: byId("memory-btn"), settings: byId("settings-btn"),
    files: byId("files-btn"),
    attach: { button: byId("attach"), picker: byId("attach-input"), box: byId("attachments"), composer: byId("composer") },
  },
});

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
  users: new Map(), // entry index of a stored user message -> { ref, text }
  generation: 0, // bumps on every chat switch, so a stale stream stops drawing
  todos: null,
  ownRuns: new Set(), // runs this tab drives or follows: other tabs' events are about the rest
  usage: null,
  footers: [], // the answers' extension action slots: [{ slot, msg }], redrawn on refresh
  runEnd: null, // how the streaming run ended, for the run-end event: { status, usage }
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
    ? t("setup.disabled", { message: state.setup.message, hint: state.setup.hint || t("setup.serverLog") })
    : live ? t("composer.live") : t("composer.placeholder");
  document.body.classList.toggle("running", live);
  if (state.panels) state.panels.attachments.setLive(live);
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
    ? t("setup.blocking", { message: s.message, hint: s.hint || t("setup.serverLog") })
    : t("setup.warning", { message: s.message, hint: s.hint || "" });
  notice(text, s.blocking ? "error" : "warn").dataset.testid = s.blocking ? "setup-hint" : "setup-warning";
}

// -- sidebar ------------------------------------------------------------------------------

state.todos = new TodoPanel(ui.todoPanel);

const chatList = new ChatList({ list: ui.chatList, search: ui.chatSearch }, {
  current: () => state.chatId,
  open: (id) => { closeView(); openChat(id).catch(showError); },
  deleted: async (id) => { if (id === state.chatId) await newChat(); },
  changed: (id) => { if (id === state.chatId) showTitle().catch(() => {}); },
  error: showError,
});

function refreshChats() {
  return chatList.refresh();
}

// -- one chat -----------------------------------------------------------------------------

const q = (id) => `?session_id=${encodeURIComponent(id)}`;

async function newChat() {
  await openChat(newChatId(), { fresh: true });
}

async function openChat(chatId, { fresh = false } = {}) {
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
  ui.chatTitle.textContent = "";
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
  ui.chatTitle.textContent = detail.title || "";
  if (state.switcher && detail.agent) state.agent = state.switcher.show(detail.agent);
  if (state.usage) {
    showAgent();
    state.usage.showChat(chatId).catch(() => {});
  }
  state.todos.load(chatId).catch(() => {});
  detail.entries = entriesOf(detail.entries);
  state.users = new Map(detail.entries.filter((e) => e.type === "input" && e.role === "user")
    .map((e) => [e.index, { ref: e.ref, text: contentText(e.content) }]));
  render(detail);
  updateWelcome();
  await refreshChats();
}

// The blank chat shows the welcome (title, description, suggested prompts).
function updateWelcome() {
  const blank = ui.messages.childElementCount === 0;
  showWelcome(ui.welcome, !state.live && blank);
  ui.exportMenu.hidden = blank;
}

async function showTitle() {
  const chatId = state.chatId;
  const detail = await getJSON(chatPath(chatId));
  if (chatId === state.chatId) ui.chatTitle.textContent = detail.title || "";
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
      last.answer.actions.append(state.regenerate);
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
function showAgent() {
  if (state.panels) state.panels.update();
  const agent = state.usage.showAgent(state.agent);
  if (agent && "demo" in agent) ui.demoBadge.hidden = !agent.demo;
}

function ownRun(runId) {
  if (runId) state.ownRuns.add(runId);
}

// Another tab or server changed something: the list follows; the open chat is drawn again
// when a run this tab does not drive starts or ends in it.
function followOthers() {
  let timer = null;
  followEvents({
    onList: () => {
      clearTimeout(timer);
      timer = setTimeout(() => refreshChats().catch(() => {}), 200);
    },
    onChat: (name, chatId) => {
      if (chatId !== state.chatId) return;
      if (name === "session_retitled") { showTitle().catch(() => {}); return; }
      if (name !== "run_started" && name !== "run_finished") return;
      if (state.live) return;
      openChat(chatId).catch(showError);
    },
    isOwn: (runId) => state.ownRuns.has(runId),
  });
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

function scrollDown() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function reconnectPath() {
  return `api/chat/reconnect${q(state.chatId)}`;
}

function onEvent(event) {
  return drawEvent(event, { state, box: ui.messages, ownRun, finish, scrollDown, showError, waitsOnUser });
}

// A view covers the chat: when the chat starts waiting on the user (an approval, a question), say so.
function waitsOnUser() {
  if (currentView()) toast(t("view.chatWaits"), "info");
}

async function finish() {
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
      () => generation === state.generation && !state.live);
  }
}

// Start a run (message, edit, regenerate, resume) and draw its events as they come.
// Nothing on the page is removed until the server has accepted the request.
async function run(path, body, userText, { cut = null, before = null } = {}) {
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
    state.answer = null;
    await openChat(state.chatId);
    if (err instanceof ApiError && err.code === "run_not_found") return; // it ended already
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

async function sendMessage(text) {
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

async function editMessage(index, text) {
  const exchange = state.exchanges.find((x) => x.index === index);
  await run("api/chat/stream", { message: text, session_id: state.chatId, agent: state.agent }, text,
    { cut: exchange ? cutFrom(exchange) : null, before: rewindTo(index) });
}

async function regenerate() {
  const last = state.exchanges[state.exchanges.length - 1];
  const cut = () => { if (last && last.answer) last.answer.node.remove(); };
  const index = Math.max(-1, ...state.users.keys());
  const user = state.users.get(index);
  if (!user) return;
  await run("api/chat/stream", { message: user.text, session_id: state.chatId, agent: state.agent }, null,
    { cut, before: rewindTo(index) });
}

async function stop() {
  try {
    await send("POST", `api/chat/cancel${q(state.chatId)}`);
  } catch (err) { showError(err); }
}

// -- start --------------------------------------------------------------------------------

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

function submit() {
  const text = ui.input.value.trim();
  if (!text || blocked()) return;
  ui.input.value = "";
  submitText(text);
}

// Send text as the user: into the live run's mailbox while one streams, else a new run.
function submitText(text) {
  if (blocked()) return;
  if (state.live) {
    joinRun(text);
    return;
  }
  sendMessage(text).catch(showError);
}

function languageChanged() {
  setLive(state.live);
  refreshChats().catch(showError);
  if (!state.live && state.chatId) openChat(state.chatId).catch(showError);
}

function toast(text, type) {
  const node = notice(text, type === "error" ? "error" : "info");
  node.dataset.testid = "toast";
  setTimeout(() => node.remove(), 6000);
}

// window.lovia's hooks into the page (extensions.js)
function connectExtensions() {
  connect({
    send: (text) => { if (text.trim()) submitText(text); },
    setDraft: (text) => { ui.input.value = text; ui.input.focus(); },
    newChat: () => { closeView(); newChat().catch(showError); },
    openSession: (id) => { closeView(); openChat(id).catch(showError); },
    toast,
    refreshMessageActions: () => {
      for (const f of state.footers) if (f.slot.isConnected) drawExtensionActions(f.slot, f.msg, toast);
    },
    state: () => ({
      sessionId: state.chatId, agent: state.agent, theme: document.documentElement.dataset.theme,
      lang: currentLang(), busy: state.live, view: currentView(),
    }),
  });
}

async function start() {
  connectExtensions();
  setupChrome(ui, pageConfig(), { emit, languageChanged });
  let info;
  try {
    info = await getJSON("api/info");
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) throw err;
    document.body.dataset.needsToken = "true";
    askForToken({ dialog: ui.tokenDialog, form: ui.tokenForm, input: ui.tokenInput });
    return;
  }
  state.setup = info.setup_problem || null;
  state.switcher = new AgentSwitcher({ select: ui.agentSwitcher, label: ui.agentName }, info.agents,
    (name) => { state.agent = name; emit("agent", { agent: name }); newChat().catch(showError); });
  state.agent = state.switcher.current;
  ui.demoBadge.hidden = !info.demo;
  state.followups = Boolean(info.features && info.features.followups);
  setupExport(ui.exportMenu, () => state.chatId);
  state.usage = new UsageView({ ring: ui.contextRing, model: ui.modelName });
  await state.usage.load();
  state.panels = await setupPanels(ui.panels, {
    agent: () => state.agent, openChat: (id) => openChat(id).catch(showError), toast,
    modelChanged: () => state.usage.load().then(showAgent).catch(() => {}),
  }, info);
  showAgent();
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
  ui.newChat.addEventListener("click", () => { closeView(); newChat().catch(showError); });
  ui.menu.addEventListener("click", () => document.body.classList.toggle("menu-open"));
  const wanted = chatFromHash();
  if (wanted) await openChat(wanted);
  else await newChat();
  await setupViews({ box: byId("view"), title: byId("view-title"), chatTitle: ui.chatTitle, emit, toast });
  const resumable = await getJSON("api/runs/resumable");
  const summary = resumableSummary(resumable, state.chatId);
  if (summary) {
    notice(summary.text, "warn", summary.chats.map((r) => [r.label, () => openChat(r.id).catch(showError),
      "open-resumable"])).dataset.testid = "resumable";
  }
  followOthers();
  document.body.dataset.ready = "true";
  markReady();
}

start().catch(showError);
