// The page's keyboard shortcuts, those 0.9.119's page has: Esc stops the answer being written
// on screen, Ctrl/Cmd+K goes to the chat search, Ctrl/Cmd+Shift+O starts a new chat, and ?
// (outside a text field) lists them. Whatever is open on top of the chat (a dialog, the
// phone's chat drawer, a menu, a view, a message being edited or a chat being renamed) has
// Esc first; the run stops on the next Esc.

import { openDialog } from "./dialog.js";
import { t } from "./i18n.js";
import { enterSends } from "./prefs.js";
import { el } from "./render.js";

const inField = (node) => node instanceof Element
  && node.closest("input, textarea, select, [contenteditable=''], [contenteditable=true]") !== null;

function somethingOnTop() {
  return document.querySelector("dialog[open], details.menu[open]") !== null
    || document.body.classList.contains("menu-open");
}

function showHelp() {
  if (document.querySelector("[data-testid=shortcuts]")) return;
  const mod = /mac/i.test(navigator.platform) ? "⌘" : "Ctrl";
  const rows = [
    [enterSends() ? "Enter" : `${mod} + Enter`, t("keys.send")],
    [enterSends() ? "Shift + Enter" : "Enter", t("keys.newline")],
    [`${mod} + K`, t("keys.search")],
    [`${mod} + Shift + O`, t("keys.newChat")],
    ["Esc", t("keys.stop")],
    ["?", t("keys.help")],
  ];
  const { body } = openDialog({ title: t("keys.title"), testid: "shortcuts" });
  const list = el("dl", "shortcuts");
  for (const [keys, what] of rows) {
    const term = el("dt");
    term.append(el("kbd", null, keys));
    list.append(term, el("dd", null, what));
  }
  body.append(list);
}

// hooks: { live(), viewOpen(), stop(), newChat(), search }
export function setupShortcuts(hooks) {
  document.addEventListener("keydown", (ev) => {
    if (ev.isComposing || ev.defaultPrevented) return;
    const mod = ev.ctrlKey || ev.metaKey;
    if (ev.key === "Escape" && !mod) {
      if (!hooks.live() || hooks.viewOpen() || somethingOnTop()) return;
      ev.preventDefault();
      hooks.stop();
    } else if (ev.key === "?" && !mod && !ev.altKey) {
      if (inField(ev.target) || somethingOnTop()) return;
      ev.preventDefault();
      showHelp();
    } else if (mod && !ev.altKey && ev.key.toLowerCase() === "k" && !ev.shiftKey) {
      ev.preventDefault();
      hooks.search.focus();
      hooks.search.select();
    } else if (mod && !ev.altKey && ev.shiftKey && ev.key.toLowerCase() === "o") {
      ev.preventDefault();
      hooks.newChat();
    }
  });
}
