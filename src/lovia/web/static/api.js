// The HTTP API, as the page uses it. Auth rides on the HttpOnly cookie set by /?token=...,
// so nothing here ever sees the token.

export class ApiError extends Error {
  constructor(status, detail, hint) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.hint = hint || null;
  }
}

// Chat ids: any text the stores accept as a session id ("alice@example.com", "team/alice",
// "Zoë 1"), at most 512 characters, no control characters. In a URL, ids of the old plain
// form go as they are (their URLs stay the same); every other id goes as "~" + its UTF-8
// bytes in base64url, which no browser, proxy or router rewrites (a "/" or a ".." would be).
const PLAIN_CHAT_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /\p{Cs}/u;
export const MAX_CHAT_ID_CHARS = 512;

// Why the page cannot use this chat id (or tool call id: same rule), or null when it can.
export function chatIdProblem(id, what = "chat id") {
  if (typeof id !== "string" || id === "") return `the ${what} is empty`;
  const length = [...id].length;
  if (length > MAX_CHAT_ID_CHARS) return `the ${what} is ${length} characters long; the limit is ${MAX_CHAT_ID_CHARS}`;
  if (CONTROL.test(id)) return `the ${what} contains a control character`;
  if (LONE_SURROGATE.test(id)) return `the ${what} is not valid text`;
  return null;
}

export const validChatId = (id) => chatIdProblem(id) === null;

function base64url(text) {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// The path segment that names an id: plain ids as they are, others "~" + base64url.
export function idSegment(id, what = "chat id") {
  const problem = chatIdProblem(id, what);
  if (problem) throw new Error(`${problem}: it cannot be used here`);
  return PLAIN_CHAT_ID.test(id) ? id : `~${base64url(id)}`;
}

// The API path of a chat (relative: the page may be served under a path prefix).
export function chatPath(id, suffix = "") {
  return `api/sessions/${idSegment(id)}${suffix}`;
}

// A new chat's id, made here (the server takes the id a message names).
export function newChatId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function check(response) {
  if (response.ok) return response;
  let detail = `HTTP ${response.status}`;
  let hint = null;
  let code = null;
  try {
    const body = await response.json();
    const d = body.detail;
    if (d && typeof d === "object" && !Array.isArray(d)) {
      detail = d.message || detail;
      hint = d.hint || null;
      code = d.code || null;
    } else if (Array.isArray(d)) {
      const first = d[0] || {};
      const where = (first.loc || []).slice(1).join(".");
      detail = where ? `${where}: ${first.msg}` : String(first.msg || detail);
      hint = body.hint || null;
      code = "invalid_request";
    } else if (typeof d === "string") {
      detail = d;
    }
  } catch (_) { /* not JSON */ }
  const error = new ApiError(response.status, detail, hint);
  error.code = code;
  if (response.status === 401 && unauthorized && !signedOut) {
    signedOut = true; // a burst of 401s acts once
    unauthorized(error);
  }
  throw error;
}

// Who hears the first 401 of any call (token.js): the page may have lost its cookie, or the
// server its token, long after the page started.
let unauthorized = null;
let signedOut = false;
export function onUnauthorized(fn) { unauthorized = fn; }

export async function getJSON(path) {
  const response = await check(await fetch(path, { credentials: "same-origin" }));
  return response.json();
}

export async function send(method, path, body) {
  const response = await check(await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
  return response.status === 204 ? null : response.json();
}

// POST that answers with SSE: calls onEvent(event) for each frame, translated into the
// page's own event shapes (below), until the stream ends or onEvent returns "stop".
export async function stream(path, body, onEvent, { signal, onRun } = {}) {
  const response = await check(await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body || {}),
    signal,
  }));
  const runId = response.headers.get("X-Lovia-Run-Id");
  if (onRun && runId) {
    try { onRun(decodeURIComponent(runId)); } catch (_) { onRun(runId); }
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const parsed = parseFrame(frame);
      if (!parsed) continue;
      for (const event of translate(parsed.name, parsed.data)) {
        if (onEvent(event) === "stop") { reader.cancel().catch(() => {}); return; }
      }
    }
  }
}

function parseFrame(frame) {
  let name = "message";
  const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (data.length === 0) return null;
  return { name, data: JSON.parse(data.join("\n")) };
}

// The chat streams' events, as the page draws them.
function translate(name, d) {
  const call = (x) => ({ id: x.id, call_id: x.id, name: x.name, arguments: x.arguments });
  switch (name) {
    case "text_delta": return [{ type: "text_delta", delta: d.delta }];
    case "message_completed": {
      const m = d.message || {};
      return [{ type: "message_completed", entries: m.reasoning ? [{ type: "reasoning", content: m.reasoning }] : [] }];
    }
    case "tool_call": return [{ type: "tool_call_started", call: call(d) }];
    case "tool_result":
      return [{ type: "tool_call_completed", call: call(d), output: String(d.result ?? ""), is_error: Boolean(d.is_error) }];
    case "todo":
      return [{ type: "tool_call_completed", call: { id: d.call_id, call_id: d.call_id, name: d.name }, output: JSON.stringify(d.todos), is_error: false, todos: d.todos }];
    case "user_queued": return [{ type: "user_message_queued", content: d.content, token: d.id }];
    case "user_injected": return [{ type: "user_message_injected", content: d.content, token: d.id }];
    case "handoff": return [{ type: "handoff", to_agent: d.to }];
    case "context_compacted": return [{ type: "context_compacted", text: (d.detail || []).join(" ") }];
    case "approval_required": return [{ type: "approval_required", call: call(d), run_id: d.run_id }];
    case "parked": return [{ type: "run_failed", error: { type: "ApprovalPending" } }];
    case "timing": return [{ type: "run_timing", finished_at: d.finished_at, duration: d.duration }];
    case "done": return [{ type: "run_completed", output: d.output, usage: d.usage, next_run_id: d.next_run_id }];
    case "error":
      if (d.code === "tool_error" && !("run_id" in d)) return [];
      return [{ type: "run_failed", stopped: Boolean(d.stopped), error: { type: d.type, message: d.message, hint: d.hint } }];
    default: return [];
  }
}

// The chat's stored messages as the entries the page draws (user input, reasoning, text,
// tool calls and results), each with its place in the chat.
export function entriesOf(messages) {
  const out = [];
  for (const m of messages || []) {
    const base = { index: m.index, run_id: m.run_id, ref: m.ref, ended: m.ended, ended_error: m.ended_error,
      ended_hint: m.ended_hint, timestamp: m.timestamp, duration: m.duration };
    if (m.role === "context_compacted") continue; // a notice, not a message
    if (m.role === "tool") {
      out.push({ ...base, type: "tool_result", call_id: m.tool_call_id, output: String(m.content ?? ""), is_error: Boolean(m.is_error) });
    } else if (m.role === "assistant") {
      if (m.reasoning) out.push({ ...base, type: "reasoning", content: m.reasoning });
      if (m.content) out.push({ ...base, type: "assistant_text", content: m.content });
      for (const c of m.tool_calls || []) out.push({ ...base, type: "tool_call", call_id: c.id, name: c.name, arguments: c.arguments });
    } else {
      out.push({ ...base, type: "input", role: m.role, content: m.content });
    }
  }
  return out;
}
