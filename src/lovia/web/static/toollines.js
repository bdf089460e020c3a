// How lovia's own tools read on their cards (issue 31, as on 0.9.119's page): "Read file a.md",
// "$ ls -la", "Web search “otters”" in place of name(args). A tool view an extension
// registers, its "*" view included, comes first (render.js asks this module last); a call
// whose arguments do not fit (a look-alike tool of the same name) keeps its name(args) line.

import { t } from "./i18n.js";

const text = (v) => (typeof v === "string" && v.trim() ? v.trim().replace(/\s+/g, " ") : null);
const quoted = (v) => (text(v) === null ? null : `“${text(v)}”`);
const optional = (v) => text(v) ?? ""; // absent: the bare label
const chartTitle = (option) => {
  const title = Array.isArray(option?.title) ? option.title[0] : option?.title;
  return optional(title?.text);
};

// tool name -> [its label's key under "toolLine.", what it acted on (null: nothing)]
const LINES = new Map([
  ["read_file", ["readFile", (a) => text(a.path)]],
  ["write_file", ["writeFile", (a) => text(a.path)]],
  ["edit_file", ["editFile", (a) => text(a.path)]],
  ["view_image", ["viewImage", (a) => text(a.path)]],
  ["list_files", ["listFiles", (a) => (text(a.path) === "." ? "" : optional(a.path))]],
  ["grep_files", ["grepFiles", (a) => quoted(a.pattern)]],
  ["read_process_output", ["processOutput", (a) => text(a.process_id)]],
  ["kill_process", ["killProcess", (a) => text(a.process_id)]],
  ["web_search", ["webSearch", (a) => quoted(a.query)]],
  ["web_fetch", ["webFetch", (a) => text(a.url)]],
  ["recall", ["recall", (a) => quoted(a.query)]],
  ["remember", ["remember", (a) => quoted(a.fact)]],
  ["forget", ["forget", (a) => quoted(a.fact)]],
  ["now", ["now", null]],
  ["show_table", ["table", (a) => optional(a.title)]],
  ["show_html", ["page", (a) => optional(a.title)]],
  ["show_chart", ["chart", (a) => chartTitle(a.option)]],
  ["start_session", ["startSession", (a) => quoted(a.title) ?? ""]],
]);

// The card's line for a call of one of lovia's own tools, or null to keep name(args).
export function builtinLine(name, args) {
  const fits = args !== null && typeof args === "object" && !Array.isArray(args);
  if (name === "shell") {
    const command = fits ? text(args.command) : null;
    return command && `$ ${command}`;
  }
  const spec = LINES.get(name);
  if (!spec) return null;
  const [key, subject] = spec;
  const label = t(`toolLine.${key}`);
  if (!subject) return label;
  if (!fits) return null;
  const what = subject(args);
  if (what === null) return null;
  return what ? `${label} ${what}` : label;
}

// The chat a start_session call opened (its result: {session_id, title, status}), or null.
function startedChat(result) {
  try {
    const chat = JSON.parse(result ?? "");
    return typeof chat?.session_id === "string" && chat.session_id ? chat : null;
  } catch (_) {
    return null;
  }
}

// start_session's card: a button to the chat it opened (its error, when it failed, shows
// as any card's does). The title is the tool's text: set as text, never as markup.
function renderStartedChat(target, tool) {
  target.replaceChildren();
  if (tool.isError || tool.status !== "done") return;
  const chat = startedChat(tool.result);
  if (!chat) return;
  const open = document.createElement("button");
  open.type = "button";
  open.className = "link chat-link";
  open.dataset.testid = "started-chat";
  open.textContent = `${t("toolLine.openChat")}: ${text(chat.title) ?? t("toolLine.startSession")}`;
  open.addEventListener("click", () => window.lovia.openSession(chat.session_id));
  target.append(open);
}

// The body lovia draws for one of its own tools' cards (null: the plain card).
export function builtinRender(name) {
  return name === "start_session" ? renderStartedChat : null;
}
