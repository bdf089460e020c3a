// A modal panel (Memory, Schedules, Settings): a <dialog> with a heading, a close button and
// the caller's content, removed from the page when it closes. Everything in it is built with
// elements and textContent: what the server sends back (a schedule's prompt, a skill's
// description) is shown as text, never parsed as markup.

import { t } from "./i18n.js";
import { el } from "./render.js";

export function openDialog({ title, testid, wide = false, part = null }) {
  const dialog = el("dialog", `panel-dialog${wide ? " wide" : ""}`);
  dialog.dataset.testid = testid;
  if (part) dialog.dataset.part = part;
  const head = el("div", "panel-head");
  const heading = el("h3", null, title);
  const close = el("button", "link panel-close", "×");
  close.type = "button";
  close.setAttribute("aria-label", t("dialog.close"));
  close.dataset.testid = "dialog-close";
  close.addEventListener("click", () => dialog.close());
  head.append(heading, close);
  const body = el("div", "panel-body");
  const status = el("div", "panel-status");
  status.dataset.testid = "panel-status";
  dialog.append(head, status, body);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  const say = (text, kind = "info") => {
    status.textContent = text || "";
    status.className = `panel-status ${kind}`;
  };
  return { dialog, body, heading, say, close: () => dialog.close() };
}

// A labelled form field: <label>text <input|select|textarea></label>.
export function field(label, control, hint) {
  const box = el("label", "panel-field");
  box.append(el("span", "panel-label", label), control);
  if (hint) box.append(el("span", "panel-hint", hint));
  return box;
}

export function input(type, { value = "", placeholder = "", testid = null } = {}) {
  const node = el(type === "textarea" ? "textarea" : "input");
  if (type !== "textarea") node.type = type;
  node.value = value;
  node.placeholder = placeholder;
  if (testid) node.dataset.testid = testid;
  return node;
}

export function choice(options, value, testid) {
  const select = el("select");
  for (const [v, label] of options) {
    const o = el("option", null, label);
    o.value = v;
    select.append(o);
  }
  select.value = value;
  if (testid) select.dataset.testid = testid;
  return select;
}

export function action(label, testid, onClick, className = "small") {
  const b = el("button", className, label);
  b.type = "button";
  b.dataset.testid = testid;
  b.addEventListener("click", onClick);
  return b;
}

export function errorText(err) {
  const msg = String((err && err.message) || err);
  return err && err.hint ? `${msg} (${err.hint})` : msg;
}
