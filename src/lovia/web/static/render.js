// Turning transcript entries and live events into DOM. Model text is Markdown rendered by
// marked and then sanitized by DOMPurify; everything else goes in as textContent only.
//
// Model output (and tool results quoted in it) can be written by whoever the model read, so
// it may only ever be text, links, images and formatting: no ids or names that could shadow
// the page's own controls, no forms or form controls, no styles that could cover the page,
// no data-* attributes the page could mistake for its own, no link that saves a file under a
// name the text chose (download=) or that opens anywhere but in a new tab (an image map's area). The page itself never looks its
// controls up by id after the first model output; it keeps references (see app.js).

import { marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.js";
import { componentFor } from "./components.js";
import { addCodeBars } from "./codeblocks.js";
import { highlightBlocks } from "./highlight.js";
import { t } from "./i18n.js";
import { drawDiagrams } from "./mermaid.js";
import { renderContext, toolViewFor } from "./extensions.js";
import { builtinLine, builtinRender } from "./toollines.js";

marked.setOptions({ gfm: true, breaks: false });

export const SANITIZE = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: [
    "form", "button", "input", "textarea", "select", "option", "optgroup", "datalist",
    "fieldset", "legend", "label", "output", "meter", "progress", "dialog", "style", "link",
    "meta", "base", "iframe", "frame", "object", "embed", "template", "slot", "map", "area",
  ],
  FORBID_ATTR: [
    "id", "name", "form", "formaction", "formmethod", "formtarget", "action", "method",
    "style", "class", "for", "popover", "popovertarget", "autofocus", "tabindex",
    "accesskey", "contenteditable", "is", "slot", "download", "ping",
  ],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

export function sanitize(html) {
  return DOMPurify.sanitize(html, SANITIZE);
}

export function markdown(target, text) {
  const tokens = marked.lexer(text || "");
  const langs = [];
  marked.walkTokens(tokens, (token) => {
    if (token.type === "code") langs.push(String(token.lang || "").trim().split(/\s+/)[0]);
  });
  target.innerHTML = sanitize(marked.parser(tokens));
  highlightBlocks(target, langs);
  drawDiagrams(target, langs);
  addCodeBars(target, langs);
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
// A tool view from an extension (window.lovia.registerToolView): the card's one-line
// summary (hovering shows the call it stands for) and its body, drawn again on each change.
// Without one, lovia's own tools read as their line in toollines.js.
// The workspace tools that name one file: their card opens it in the Files panel.
const FILE_TOOLS = new Set(["read_file", "write_file", "edit_file"]);

function toolPath(args) {
  try {
    const parsed = typeof args === "string" ? JSON.parse(args || "{}") : args || {};
    return typeof parsed.path === "string" && parsed.path ? parsed.path : null;
  } catch (_) { return null; }
}

// A button in a card's summary line: asks the Files panel (files.js) to show `path`.
function openInFiles(path) {
  const button = el("button", "link tool-open-file", t("tool.openInFiles"));
  button.type = "button";
  button.title = t("tool.openInFiles");
  button.dataset.testid = "tool-open-file";
  button.addEventListener("click", (event) => {
    event.preventDefault(); // inside <summary>: the card does not fold or unfold
    event.stopPropagation();
    document.dispatchEvent(new CustomEvent("lovia-open-file", { detail: { path } }));
  });
  return button;
}

function applyToolView(entry, status, result, isError) {
  const found = toolViewFor(String(entry.call.name)) || { summary: [], render: null };
  const view = { ...found, render: found.render || builtinRender(String(entry.call.name)) };
  let args;
  try { args = JSON.parse(entry.call.arguments || "{}"); } catch (_) { args = undefined; }
  const tool = Object.freeze({
    id: entry.call.call_id, name: String(entry.call.name), args, status,
    result: result === null ? undefined : result, isError,
  });
  for (const summary of [...view.summary, (x) => builtinLine(x.name, x.args)]) {
    let line = null;
    try { line = summary(tool); } catch (err) { console.error("lovia: a tool view failed", err); }
    if (line !== null && line !== undefined) {
      entry.name.textContent = String(line);
      entry.name.title = `${tool.name}(${entry.call.arguments || ""})`;
      break;
    }
  }
  if (!view.render) return;
  if (!entry.view) {
    entry.view = el("div", "tool-view");
    entry.view.dataset.part = "tool-view";
    // the raw arguments and result stay one "Source" click away
    const source = el("button", "link small tool-source", t("tool.source"));
    source.type = "button";
    source.dataset.testid = "tool-source";
    source.addEventListener("click", () => entry.box.classList.toggle("show-source"));
    entry.box.classList.add("has-view");
    entry.box.querySelector("summary").after(entry.view, source);
  }
  if (typeof entry.cleanup === "function") { try { entry.cleanup(); } catch (_) { /* ignore */ } }
  entry.cleanup = null;
  try {
    const out = view.render(entry.view, tool, Object.freeze(renderContext({ callId: tool.id })));
    if (typeof out === "function") entry.cleanup = out;
  } catch (err) { console.error("lovia: a tool view failed", err); }
  // what the view drew is the card's payload, as a component's is: shown, not folded away
  if (status === "done" && entry.view.childNodes.length) entry.box.open = true;
}

export class AnswerView {
  constructor(container) {
    this.node = el("article", "msg assistant");
    this.node.dataset.testid = "answer";
    this.node.dataset.part = "turn";
    this.node.dataset.role = "assistant";
    this.body = el("div", "answer-body");
    this.node.append(this.body);
    this.actions = el("div", "actions");
    this.actions.dataset.part = "message-actions";
    this.node.append(this.actions);
    container.append(this.node);
    this.text = null;
    this.textSource = "";
    this.tools = new Map();
    this.pendingRender = false;
    this.parts = []; // the Markdown source of each text part, for Copy
    this.liveReasoning = null;
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
    if (this.text) {
      markdown(this.text, this.textSource);
      this.parts.push(this.textSource);
    }
    this.text = null;
  }

  // The answer's text as Markdown (what Copy copies).
  source() {
    return [...this.parts, ...(this.text ? [this.textSource] : [])].join("\n\n");
  }

  reasoningBox(open) {
    const box = el("details", "reasoning");
    box.dataset.testid = "reasoning";
    box.open = open;
    const pre = el("pre", null, "");
    box.append(el("summary", null, t("reasoning.label")), pre);
    this.body.append(box);
    return { box, pre };
  }

  // The model's reasoning as it streams: open while it streams, folded once complete.
  addReasoningDelta(delta) {
    this.endText();
    if (!this.liveReasoning) this.liveReasoning = this.reasoningBox(true);
    this.liveReasoning.pre.textContent += delta;
  }

  addReasoning(content) {
    const live = this.liveReasoning;
    this.liveReasoning = null;
    const { box, pre } = live || this.reasoningBox(false);
    pre.textContent = content;
    box.open = false;
  }

  addToolCall(call) {
    this.endText();
    this.liveReasoning = null;
    const box = el("details", "tool");
    box.dataset.testid = "tool-call";
    box.dataset.part = "tool";
    box.dataset.tool = String(call.name);
    box.dataset.status = "running";
    const summary = el("summary");
    summary.append(el("span", "tool-name", call.name), el("span", "tool-state", t("tool.running")));
    const path = FILE_TOOLS.has(String(call.name)) ? toolPath(call.arguments) : null;
    if (path) summary.append(openInFiles(path));
    const args = el("pre", "tool-args", prettyJSON(call.arguments || "{}"));
    const result = el("pre", "tool-result", "");
    box.append(summary, el("div", "label", t("tool.arguments")), args,
      el("div", "label", t("tool.result")), result);
    this.body.append(box);
    const entry = { box, result, state: summary.lastChild, name: summary.firstChild, call, done: false };
    this.tools.set(call.call_id, entry);
    applyToolView(entry, "running", null, false);
    return box;
  }

  // Calls still running (when the run was stopped): what addStoppedCalls draws again.
  unfinishedCalls() {
    return [...this.tools.values()].filter((x) => !x.done).map((x) => x.call);
  }

  addStoppedCalls(calls) {
    const mark = this.body.querySelector("[data-testid=ended]");
    for (const call of calls) {
      const box = this.addToolCall(call);
      box.classList.add("stopped");
      box.dataset.status = "stopped";
      this.tools.get(call.call_id).state.textContent = t("tool.stopped");
      if (mark) this.body.insertBefore(box, mark);
    }
  }

  // Two or more reasoning / tool steps in a row fold under one summary line.
  foldActivity() {
    const runs = [];
    let current = [];
    for (const child of [...this.body.children]) {
      const step = child.matches("details.tool, details.reasoning");
      if (step) current.push(child);
      if (!step || child === this.body.lastElementChild) {
        if (current.length >= 2) runs.push(current);
        current = [];
      }
    }
    for (const steps of runs) {
      const fold = el("details", "activity");
      fold.dataset.part = "activity";
      fold.dataset.testid = "activity";
      const names = steps.filter((s) => s.dataset.tool).map((s) => s.dataset.tool);
      const label = names.length
        ? t("activity.tools", { n: steps.length, names: [...new Set(names)].join(", ") })
        : t("activity.steps", { n: steps.length });
      fold.append(el("summary", null, label));
      this.body.insertBefore(fold, steps[0]);
      fold.append(...steps);
    }
  }

  addToolResult(callId, output, isError) {
    const found = this.tools.get(callId);
    if (!found) return;
    found.result.textContent = output;
    found.done = true;
    found.state.textContent = isError ? t("tool.error") : t("tool.done");
    found.box.dataset.status = isError ? "error" : "done";
    found.box.classList.toggle("error", Boolean(isError));
    applyToolView(found, isError ? "error" : "done", output, Boolean(isError));
    const component = isError ? null : componentFor(output, found.call);
    if (component) found.box.after(component);
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
  node.dataset.part = "turn";
  node.dataset.role = "user";
  const body = el("div", "user-text", text);
  node.append(body);
  if (onEdit) {
    const actions = el("div", "actions");
    const button = el("button", "link", t("message.edit"));
    button.type = "button";
    button.dataset.testid = "edit";
    button.dataset.action = "edit";
    button.title = t("message.edit");
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
    // the answer that ended a run: its footer's time, duration and run (footers.js)
    if (typeof e.duration === "number") answer.runEnd = { at: e.timestamp, duration: e.duration, runId: e.run_id };
    if (e.type === "assistant_text") { answer.endText(); answer.addText(e.content); answer.endText(); }
    else if (e.type === "reasoning") answer.addReasoning(e.content);
    else if (e.type === "tool_call") {
      answer.addToolCall(e);
      const r = results.get(e.call_id);
      if (r) answer.addToolResult(e.call_id, r.output, r.is_error);
      else answer.tools.get(e.call_id).state.textContent = t("tool.noResult");
    }
  });
  finish(current);
  for (const x of exchanges) if (x.answer) x.answer.foldActivity();
  return exchanges;
}
