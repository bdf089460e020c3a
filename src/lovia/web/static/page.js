// The page's own controls and the open chat's state, shared by the page's modules (app.js,
// chat.js, runs.js), with the small helpers that draw notices and the composer's live state.
//
// The controls are looked up once, here, before any model output is on the page, and used
// through these references only: markup in an answer (already stripped of ids, names and form
// controls by the sanitizer) can never stand in for them.

import { ApiError } from "./api.js";
import { t } from "./i18n.js";
import { el } from "./render.js";
import { TodoPanel } from "./todos.js";

export const byId = (id) => document.getElementById(id);
export const ui = Object.freeze({
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
  origin: byId("origin"),
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

export const state = {
  chatId: null,
  live: false,
  agent: null,
  source: null,
  setup: null, // { message, hint, blocking } when the model cannot (or may not) be used
  modelConfig: false, // the server edits a config.json: a missing model is set up in Settings
  demoAgents: new Set(), // the served agents that are the offline demo (GET /api/info)
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

state.todos = new TodoPanel(ui.todoPanel);

export function blocked() {
  return Boolean(state.setup && state.setup.blocking);
}

export function setLive(live) {
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

export function notice(text, className = "info", actions = []) {
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

export function showError(err) {
  notice(errorText(err), "error").dataset.testid = "error";
}

export function showSetup() {
  const s = state.setup;
  if (!s) return;
  const text = s.blocking
    ? t("setup.blocking", { message: s.message, hint: s.hint || t("setup.serverLog") })
    : t("setup.warning", { message: s.message, hint: s.hint || "" });
  // Without a model, a server that edits its config.json is set up from the page: Settings →
  // Models (0.9.119's "Configure a model"); the page starts over once one is saved.
  const actions = s.blocking && state.modelConfig
    ? [[t("setup.configure"), () => document.dispatchEvent(
      new CustomEvent("lovia-open-settings", { detail: { tab: "models" } })), "setup-configure"]]
    : [];
  notice(text, s.blocking ? "error" : "warn", actions).dataset.testid = s.blocking ? "setup-hint" : "setup-warning";
}

export function toast(text, type) {
  const node = notice(text, type === "error" ? "error" : "info");
  node.dataset.testid = "toast";
  setTimeout(() => node.remove(), 6000);
}

export function scrollDown() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

// the chat's query string on the chat API
export const q = (id) => `?session_id=${encodeURIComponent(id)}`;
