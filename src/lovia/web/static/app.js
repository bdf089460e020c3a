// The chat page: sidebar of chats, the open chat, the composer. State lives on the server;
// the page only renders it and follows the live run (after a reload too: #chat=<id>).
// This module wires the page up; the page's controls and state are in page.js, opening a
// chat in chat.js, starting a run in runs.js.

import { ApiError, getJSON, validChatId } from "./api.js";
import { drawExtensionActions } from "./actions.js";
import { AgentSwitcher } from "./agents.js";
import { pageConfig } from "./config.js";
import { currentLang } from "./i18n.js";
import { setupChrome } from "./chrome.js";
import { setupSidebarToggle } from "./sidebar.js";
import { followEvents } from "./follow.js";
import { handleUnauthorized } from "./token.js";
import { UsageView } from "./usage.js";
import { setupExport } from "./exporting.js";
import { resumableSummary } from "./pending.js";
import { setupPanels } from "./panels.js";
import { connect, emit, markReady, on } from "./extensions.js";
import { TasksMenu } from "./tasks.js";
import { runEnded } from "./alerts.js";
import { applyTextSize, labelSend, sendsOnEnter } from "./prefs.js";
import { closeView, currentView, setupViews } from "./views.js";
import { byId, notice, setLive, showError, state, toast, ui } from "./page.js";
import { newChat, openChat, refreshChats, showAgent, showTitle } from "./chat.js";
import { stop, submit, submitText } from "./runs.js";
import { setupShortcuts } from "./shortcuts.js";

// The chat the address names: #chat=<id>, or ?session=<id>, the form of 0.9.119's page (its
// bookmarks and shared links), which is written the page's way before the chat opens.
function chatFromAddress() {
  const url = new URL(location.href);
  const linked = url.searchParams.get("session");
  if (linked !== null) {
    url.searchParams.delete("session");
    if (!/chat=/.test(url.hash) && validChatId(linked)) url.hash = `chat=${encodeURIComponent(linked)}`;
    history.replaceState(null, "", url);
  }
  const match = /chat=([^&]*)/.exec(location.hash);
  if (!match) return null;
  let id = null;
  try { id = decodeURIComponent(match[1]); } catch (_) { return null; }
  return validChatId(id) ? id : null;
}

// Another tab or server changed something: the list follows; the open chat is drawn again
// when a run this tab does not drive starts or ends in it.
function followOthers() {
  let timer = null;
  followEvents({
    onList: (name) => {
      clearTimeout(timer);
      timer = setTimeout(() => refreshChats().catch(() => {}), 200);
      // an open panel that shows runs (Schedules) follows them too
      if (name === "run_started" || name === "run_finished") {
        document.dispatchEvent(new CustomEvent("lovia-runs-changed"));
      }
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

// A model was configured from Settings while none was: once the server serves an agent, the
// page starts over (its agent, its panels, the composer).
async function startOverOnceServed() {
  try {
    const info = await getJSON("api/info");
    if (!info.setup_problem && (info.agents || []).length) location.reload();
  } catch (_) { /* the next save tries again */ }
}

function languageChanged() {
  setLive(state.live);
  refreshChats().catch(showError);
  if (!state.live && state.chatId) openChat(state.chatId).catch(showError);
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
  applyTextSize();
  labelSend(ui.send);
  const chrome = setupChrome(ui, pageConfig(), { emit, languageChanged });
  handleUnauthorized({ dialog: ui.tokenDialog, form: ui.tokenForm, input: ui.tokenInput }, toast);
  let info;
  try {
    info = await getJSON("api/info");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // token.js has taken it up
    throw err;
  }
  state.setup = info.setup_problem || null;
  state.modelConfig = Boolean(info.features && info.features.model_config);
  state.switcher = new AgentSwitcher({ select: ui.agentSwitcher, label: ui.agentName }, info.agents,
    (name) => { state.agent = name; emit("agent", { agent: name }); newChat().catch(showError); });
  state.agent = state.switcher.current;
  state.demoAgents = new Set(info.demo_agents || []);
  ui.demoBadge.hidden = !info.demo;
  state.followups = Boolean(info.features && info.features.followups);
  setupExport(ui.exportMenu, () => state.chatId);
  const tasks = new TasksMenu({ box: byId("tasks"), count: byId("tasks-count"), items: byId("tasks-items") },
    (id) => openChat(id).catch(showError));
  for (const event of ["session", "run-end"]) on(event, (e) => { tasks.show(e.sessionId); });
  on("run-end", (e) => runEnded(e, () => ui.chatTitle.textContent.trim()));
  state.usage = new UsageView({ ring: ui.contextRing, model: ui.modelName });
  await state.usage.load();
  state.panels = await setupPanels(ui.panels, {
    agent: () => state.agent, openChat: (id) => openChat(id).catch(showError), toast,
    modelChanged: () => {
      if (state.setup && state.setup.blocking) { startOverOnceServed(); return; }
      state.usage.load().then(showAgent).catch(() => {});
    }, chrome,
  }, info);
  showAgent();
  ui.composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    submit();
  });
  ui.input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.isComposing && sendsOnEnter(ev)) {
      ev.preventDefault();
      submit();
    }
  });
  ui.stop.addEventListener("click", stop);
  setupShortcuts({
    live: () => state.live, viewOpen: () => currentView() !== null, stop, search: ui.chatSearch,
    newChat: () => { closeView(); newChat().catch(showError); },
  });
  ui.newChat.addEventListener("click", () => { closeView(); newChat().catch(showError); });
  ui.menu.addEventListener("click", () => document.body.classList.toggle("menu-open"));
  setupSidebarToggle(byId("sidebar-collapse"), byId("sidebar-expand"));
  const wanted = chatFromAddress();
  if (wanted) await openChat(wanted);
  else await newChat();
  // an address typed or pasted in this tab, a link followed, Back: the chat it names opens
  addEventListener("hashchange", () => {
    const named = chatFromAddress();
    if (named && named !== state.chatId) openChat(named).catch(showError);
  });
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
