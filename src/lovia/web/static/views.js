// Views (window.lovia.registerView): pages of an extension's own drawn in the main area in
// place of the chat, opened by a link to ?view=<id>[/<path>] or lovia.openView. The chat stays
// current underneath (a run keeps streaming); the view lives in the URL beside it.
// Views are registered before the page starts (extension scripts run first); app.js connects
// this module to the page with setupViews once it starts.

import { t } from "./i18n.js";

const ID = /^[a-z0-9-]+$/;
const views = new Map(); // id -> stack of { value }
let page = null; // { box, title, chatTitle, emit, toast }
let open = null; // { id, path }
let cleanup = null;
let draws = 0; // bumps on every draw and close: a render that lands late is cleaned up at once
let shown = null; // the view the last "view" event named

const top = (id) => {
  const stack = views.get(id);
  return stack && stack.length ? stack[stack.length - 1].value : null;
};

export function currentView() {
  return open ? (open.path ? `${open.id}/${open.path}` : open.id) : null;
}

function split(target) {
  const text = String(target);
  const cut = text.indexOf("/");
  return cut < 0 ? { id: text, path: "" } : { id: text.slice(0, cut), path: text.slice(cut + 1) };
}

function runCleanup() {
  const fn = cleanup;
  cleanup = null;
  if (fn) try { fn(); } catch (err) { console.error("lovia: a view's cleanup failed", err); }
}

function setURL(target) {
  const url = new URL(location.href);
  if (target) url.searchParams.set("view", target);
  else url.searchParams.delete("view");
  if (url.href !== location.href) history.pushState(null, "", url);
}

// The sidebar's links to the open view say so (compared by id: ?view=exec is current on exec/perf).
function markLinks() {
  for (const a of document.querySelectorAll("[data-part=sidebar-nav] a[href^='?view=']")) {
    const id = split(a.getAttribute("href").slice("?view=".length)).id;
    if (open && id === open.id) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function announce() {
  const now = currentView();
  if (now === shown) return;
  shown = now;
  page.emit("view", { view: now });
}

function showing(on, title) {
  document.body.classList.toggle("view-open", on);
  page.box.hidden = !on;
  page.title.hidden = !on;
  page.chatTitle.hidden = on;
  page.title.textContent = on ? title || "" : "";
  markLinks();
}

async function draw() {
  if (!page || !open) return;
  const view = top(open.id);
  const n = ++draws;
  runCleanup();
  showing(true, view.title);
  const el = document.createElement("div");
  el.className = "view-body";
  page.box.replaceChildren(el);
  announce();
  try {
    const out = await view.render(el, Object.freeze({ path: open.path }));
    if (typeof out !== "function") return;
    if (n === draws) cleanup = out;
    else try { out(); } catch (err) { console.error("lovia: a view's cleanup failed", err); }
  } catch (err) {
    if (n !== draws) return;
    console.error(`lovia: view '${open.id}' failed`, err);
    const box = document.createElement("div");
    box.className = "notice error";
    box.dataset.testid = "view-error";
    box.textContent = t("view.failed", { error: String((err && err.message) || err) });
    page.box.replaceChildren(box);
  }
}

export function registerView(id, view) {
  if (typeof id !== "string" || !ID.test(id)) throw new TypeError("a view id uses a-z, 0-9 and -");
  if (id.startsWith("lovia")) throw new TypeError("view ids starting with 'lovia' are lovia's own");
  if (!view || typeof view.render !== "function") throw new TypeError("a view needs render(el, ctx)");
  const stack = views.get(id) || [];
  const entry = { value: view };
  stack.push(entry);
  views.set(id, stack);
  if (open && open.id === id) draw();
  return () => {
    const i = stack.indexOf(entry);
    if (i < 0) return;
    stack.splice(i, 1);
    if (open && open.id === id) {
      if (stack.length) draw();
      else closeView();
    }
  };
}

export function openView(target, { push = true } = {}) {
  const { id, path } = split(target);
  if (!top(id)) throw new Error(`no view is registered as '${id}'`);
  open = { id, path };
  if (push) setURL(currentView());
  document.body.classList.remove("menu-open");
  return draw();
}

export function closeView({ push = true } = {}) {
  if (!open) return;
  open = null;
  draws += 1;
  runCleanup();
  if (push) setURL(null);
  if (!page) return;
  page.box.replaceChildren();
  showing(false);
  announce();
}

// Open what ?view= names (at start, after Back or Forward): an unknown id gets a notice.
function follow(target, push) {
  if (!target) { closeView({ push }); return null; }
  try {
    return openView(target, { push });
  } catch (_) {
    closeView({ push: false });
    page.toast(t("view.unknown", { id: split(target).id }), "error");
    return null;
  }
}

export function setupViews(hooks) {
  page = hooks;
  // a plain click on a link to ?view=... opens it in place; links in messages are left alone
  document.addEventListener("click", (ev) => {
    if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    const a = ev.target instanceof Element ? ev.target.closest("a[href]") : null;
    if (!a || a.closest("[data-part=transcript]") || a.target === "_blank") return;
    const href = a.getAttribute("href");
    if (!href.startsWith("?view=")) return;
    ev.preventDefault();
    let target = "";
    try { target = decodeURIComponent(href.slice("?view=".length)); } catch (_) { return; }
    follow(target, true);
  });
  addEventListener("popstate", () => follow(new URL(location.href).searchParams.get("view"), false));
  const wanted = new URL(location.href).searchParams.get("view");
  return wanted ? Promise.resolve(follow(wanted, false)) : Promise.resolve();
}
