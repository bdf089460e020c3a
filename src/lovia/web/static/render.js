// Turning transcript entries and live events into DOM. Model text is Markdown rendered by
// marked and then sanitized by DOMPurify; everything else goes in as textContent only.
//
// Model output (and tool results quoted in it) can be written by whoever the model read, so
// it may only ever be text, links, images and formatting: no ids or names that could shadow
// the page's own controls, no forms or form controls, no styles that could cover the page,
// no data-* attributes the page could mistake for its own. The page itself never looks its
// controls up by id after the first model output; it keeps references (see app.js).

import { marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.js";

marked.setOptions({ gfm: true, breaks: false });

export const SANITIZE = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: [
    "form", "button", "input", "textarea", "select", "option", "optgroup", "datalist",
    "fieldset", "legend", "label", "output", "meter", "progress", "dialog", "style", "link",
    "meta", "base", "iframe", "frame", "object", "embed", "template", "slot",
  ],
  FORBID_ATTR: [
    "id", "name", "form", "formaction", "formmethod", "formtarget", "action", "method",
    "style", "class", "for", "popover", "popovertarget", "autofocus", "tabindex",
    "accesskey", "contenteditable", "is", "slot",
  ],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

export function sanitize(html) {
  return DOMPurify.sanitize(html, SANITIZE);
}

export function markdown(target, text) {
  const html = marked.parse(text || "", { async: false });
  target.innerHTML = sanitize(html);
  for (const link of target.querySelectorAll("a[href]")) {
    link.target = "_blank";
    link.rel = "noopener noreferrer";
  }
}

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// Invisible and direction-changing characters (format characters such as U+202E or
// U+200B, line and paragraph separators, controls other than newline and tab) written as
// \uXXXX escapes: a tool call's arguments come from the model, and a person approving it
// must see the text the call carries, not what such characters make it look like.
const HIDDEN = /[\p{Cf}\p{Zl}\p{Zp}\p{Co}\u0000-\u0008\u000b-\u001f\u007f-\u009f]/gu;

export function visible(text) {
  return String(text).replace(HIDDEN, (c) => {
    const code = c.codePointAt(0);
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

export function prettyJSON(text) {
  try {
    return visible(JSON.stringify(JSON.parse(text), null, 2));
  } catch (_) {
    return visible(text);
  }
}

// One assistant answer: text parts, folded reasoning, folded tool calls, in order.
export class AnswerView {
  constructor(container) {
    this.node = el("article", "msg assistant");
    this.node.dataset.testid = "answer";
    this.body = el("div", "answer-body");
    this.node.append(this.body);
    this.actions = el("div", "actions");
    this.node.append(this.actions);
    container.append(this.node);
    this.text = null;
    this.textSource = "";
    this.tools = new Map();
    this.pendingRender = false;
  }

  addText(delta) {
    if (this.text === null) {
      this.text = el("div", "md");
      this.textSource = "";
      this.body.append(this.text);
    }
    this.textSource += delta;
    if (!this.pendingRender) {
      this.pendingRender = true;
      requestAnimationFrame(() => {
        this.pendingRender = false;
        if (this.text) markdown(this.text, this.textSource);
      });
    }
  }

  endText() {
    if (this.text) markdown(this.text, this.textSource);
    this.text = null;
  }

  addReasoning(content) {
    const box = el("details", "reasoning");
    box.append(el("summary", null, "Reasoning"), el("pre", null, content));
    this.body.append(box);
  }

  addToolCall(call) {
    this.endText();
    const box = el("details", "tool");
    box.dataset.testid = "tool-call";
    const summary = el("summary");
    summary.append(el("span", "tool-name", call.name), el("span", "tool-state", "running…"));
    const args = el("pre", "tool-args", prettyJSON(call.arguments || "{}"));
    const result = el("pre", "tool-result", "");
    box.append(summary, el("div", "label", "Arguments"), args, el("div", "label", "Result"), result);
    this.body.append(box);
    this.tools.set(call.call_id, { box, result, state: summary.lastChild });
    return box;
  }

  addToolResult(callId, output, isError) {
    const found = this.tools.get(callId);
    if (!found) return;
    found.result.textContent = output;
    found.state.textContent = isError ? "error" : "done";
    found.box.classList.toggle("error", Boolean(isError));
  }

  note(text, className) {
    this.endText();
    const node = el("div", `note ${className || ""}`, text);
    this.body.append(node);
    return node;
  }

  // How the answer ended when it did not complete: "stopped", "failed", "interrupted".
  mark(ended, detail) {
    this.node.classList.add(`ended-${ended}`);
    this.node.dataset.ended = ended;
    const label = ended === "stopped" ? "(stopped)" : `(${ended}${detail ? `: ${detail}` : ""})`;
    const node = this.note(label, ended === "stopped" ? "muted" : "error");
    node.dataset.testid = "ended";
    return node;
  }
}

export function userBubble(container, text, { onEdit } = {}) {
  const node = el("article", "msg user");
  node.dataset.testid = "user-message";
  const body = el("div", "user-text", text);
  node.append(body);
  if (onEdit) {
    const actions = el("div", "actions");
    const button = el("button", "link", "Edit");
    button.type = "button";
    button.dataset.testid = "edit";
    button.addEventListener("click", () => startEdit(node, body, text, onEdit));
    actions.append(button);
    node.append(actions);
  }
  container.append(node);
  return node;
}

function startEdit(node, body, text, onEdit) {
  if (node.querySelector("textarea")) return;
  const area = el("textarea", "edit-area");
  area.value = text;
  area.dataset.testid = "edit-input";
  const save = el("button", "primary", "Save & send");
  save.type = "button";
  save.dataset.testid = "edit-save";
  const cancel = el("button", null, "Cancel");
  cancel.type = "button";
  const bar = el("div", "edit-bar");
  bar.append(save, cancel);
  body.hidden = true;
  node.append(area, bar);
  area.focus();
  const close = () => { area.remove(); bar.remove(); body.hidden = false; };
  const submit = () => {
    const value = area.value.trim();
    if (value) { close(); onEdit(value); }
  };
  cancel.addEventListener("click", close);
  save.addEventListener("click", submit);
  area.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); submit(); }
    else if (ev.key === "Escape") { ev.preventDefault(); close(); }
  });
}

// Render stored entries: user inputs as bubbles, everything between them as one answer.
// Returns one exchange per user message, in order: { user, answer, index, ended }, where
// answer is the AnswerView after it (null when nothing answered it). An answer whose run was
// stopped or gave up is marked so (an empty one is drawn to carry the mark).
export function renderEntries(container, entries, { onEdit, offset = 0 } = {}) {
  const results = new Map();
  for (const e of entries) if (e.type === "tool_result") results.set(e.call_id, e);
  let current = null;
  const exchanges = [];
  const finish = (x) => {
    if (!x || !x.ended) return;
    if (!x.answer) x.answer = new AnswerView(container);
    x.answer.mark(x.ended, x.endedError);
    if (x.endedHint) x.answer.note(`To fix: ${x.endedHint}`, "error").dataset.testid = "ended-hint";
  };
  entries.forEach((e, i) => {
    if (e.type === "input") {
      if (e.role !== "user") return;
      finish(current);
      const text = typeof e.content === "string" ? e.content
        : e.content.map((p) => p.text || "").join("");
      const index = e.index ?? offset + i;
      const user = userBubble(container, text, { onEdit: onEdit ? (v) => onEdit(index, v) : null });
      current = { user, answer: null, index, ended: e.ended || null, endedError: e.ended_error || null,
        endedHint: e.ended_hint || null };
      exchanges.push(current);
      return;
    }
    if (!current) { current = { user: null, answer: null, index: null, ended: null }; exchanges.push(current); }
    if (!current.answer) current.answer = new AnswerView(container);
    const answer = current.answer;
    if (e.type === "assistant_text") { answer.endText(); answer.addText(e.content); answer.endText(); }
    else if (e.type === "reasoning") answer.addReasoning(e.content);
    else if (e.type === "tool_call") {
      answer.addToolCall(e);
      const r = results.get(e.call_id);
      if (r) answer.addToolResult(e.call_id, r.output, r.is_error);
      else answer.tools.get(e.call_id).state.textContent = "no result yet";
    }
  });
  finish(current);
  return exchanges;
}
