// The extension API, window.lovia: what ChatUI(scripts=[...]) modules use to draw tool
// results of their own kinds (renderers), change how tool cards read (tool views), listen
// to what the page does (events), draw pages of their own (views, views.js) and add to the
// context runs start with (provideContext).
// This module runs before the extension scripts (page.py puts it first), so window.lovia
// is there when they run; app.js connects it to the page once it starts.

import "./components.js"; // the built-in renderers, registered before any extension script
import { pageConfig } from "./config.js";
import { currentLang, t } from "./i18n.js";
import { push, rendererFor, renderers, top } from "./registry.js";
import { closeView, openView, registerView } from "./views.js";

const listeners = new Map(); // event -> Set of functions
const toolViews = new Map(); // tool name or "*" -> stack of { value }
const contexts = new Map(); // key -> stack of { value: fn }
const actions = new Map(); // message action id -> stack of { value }
let page = {}; // app.js's hooks: send, setDraft, newChat, openSession, toast, state
let settle;
const ready = new Promise((resolve) => { settle = resolve; });

function checkKey(what, key) {
  if (typeof key !== "string" || !key) throw new TypeError(`${what} must be a non-empty string`);
}

export function emit(event, payload) {
  for (const fn of [...(listeners.get(event) || [])]) {
    try { fn(Object.freeze({ ...payload })); } catch (err) { console.error(`lovia: a '${event}' listener failed`, err); }
  }
}

// The view for tool `name`, field by field: the tool's own view, then the "*" view.
export function toolViewFor(name) {
  const own = top(toolViews, name) || {};
  const any = top(toolViews, "*") || {};
  if (!own.summary && !own.render && !any.summary && !any.render) return null;
  return { summary: [own.summary, any.summary].filter(Boolean), render: own.render || any.render || null };
}

// The context for a run's request: each provided key's fn(), read now; null when none.
export function clientContext() {
  const out = {};
  for (const key of contexts.keys()) {
    const fn = top(contexts, key);
    if (!fn) continue;
    try { out[key] = fn(); } catch (err) { console.error(`lovia: context '${key}' failed`, err); }
  }
  return Object.keys(out).length ? out : null;
}

// The message actions (registerMessageAction) that show on msg, in registration order.
export function messageActionsFor(msg) {
  const out = [];
  for (const id of actions.keys()) {
    const action = top(actions, id);
    if (!action) continue;
    let shown = true;
    try { shown = !action.when || Boolean(action.when(msg)); } catch (err) {
      console.error(`lovia: message action '${id}' failed`, err);
      shown = false;
    }
    if (shown) out.push({ id, action });
  }
  return out;
}

export function connect(hooks) { page = hooks; }
export function markReady() { settle(); }
// the page's own modules listen to its events as extensions do
export function on(event, fn) { return api.on(event, fn); }

const basePath = () => new URL(".", document.baseURI).pathname.replace(/\/$/, "");

const api = {
  get version() { return pageConfig().version || ""; },
  ready,
  get state() { return Object.freeze({ ...(page.state ? page.state() : {}) }); },
  on(event, fn) {
    checkKey("event", event);
    if (typeof fn !== "function") throw new TypeError("fn must be a function");
    const set = listeners.get(event) || new Set();
    set.add(fn);
    listeners.set(event, set);
    return () => set.delete(fn);
  },
  send: (text) => page.send && page.send(String(text)),
  setDraft: (text) => page.setDraft && page.setDraft(String(text)),
  newChat: () => page.newChat && page.newChat(),
  openSession: (id) => page.openSession && page.openSession(String(id)),
  toast: (text, { type = "info" } = {}) => page.toast && page.toast(String(text), type),
  url(path) {
    if (typeof path !== "string" || !path.startsWith("/")) throw new TypeError("path must start with /");
    return basePath() + path;
  },
  fetch(path, init) { return fetch(api.url(path), { credentials: "same-origin", ...(init || {}) }); },
  t: (key, params) => t(key, params),
  registerRenderer(kind, renderer) {
    checkKey("kind", kind);
    if (!renderer || typeof renderer.render !== "function") throw new TypeError("a renderer needs render(el, props, ctx)");
    const undo = push(renderers, kind, renderer);
    return undo;
  },
  getRenderer: (kind) => rendererFor(kind),
  registerToolView(name, view) {
    checkKey("name", name);
    if (!view || typeof view !== "object") throw new TypeError("a tool view is an object");
    return push(toolViews, name, view);
  },
  registerMessageAction(id, action) {
    checkKey("id", id);
    if (!action || typeof action.run !== "function") throw new TypeError("a message action needs run(msg)");
    const undo = push(actions, id, action);
    api.refreshMessageActions();
    return () => { undo(); api.refreshMessageActions(); };
  },
  refreshMessageActions: () => page.refreshMessageActions && page.refreshMessageActions(),
  registerView: (id, view) => registerView(id, view),
  openView: (target) => { openView(target); },
  closeView: () => closeView(),
  provideContext(key, fn) {
    checkKey("key", key);
    if (typeof fn !== "function") throw new TypeError("fn must be a function");
    return push(contexts, key, fn);
  },
};

export function renderContext(extra) {
  return {
    theme: document.documentElement.dataset.theme === "dark" ? "dark" : "light",
    lang: currentLang(),
    basePath: basePath(),
    ...extra,
  };
}

Object.defineProperty(window, "lovia", { value: Object.freeze(api), writable: false, configurable: false });
