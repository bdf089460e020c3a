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

// The API path of a chat, with suffix ("/messages", ...) already encoded by the caller.
export function chatPath(id, suffix = "") {
  return `/api/chats/${idSegment(id)}${suffix}`;
}

async function check(response) {
  if (response.ok) return response;
  let detail = `HTTP ${response.status}`;
  let hint = null;
  try {
    const body = await response.json();
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    hint = body.hint || null;
  } catch (_) { /* not JSON */ }
  throw new ApiError(response.status, detail, hint);
}

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

// POST whose SSE answer the page does not read (it follows that run already): resolves to
// the response's headers once the server has accepted the request.
export async function postOnly(path, body) {
  const response = await check(await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body || {}),
  }));
  if (response.body) response.body.cancel().catch(() => {});
  return response.headers;
}

// POST that answers with SSE: calls onEvent(event, seq) for each frame until the stream ends.
export async function stream(path, body, onEvent) {
  const response = await check(await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body || {}),
  }));
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const parsed = parseFrame(frame);
      if (parsed) onEvent(parsed.event, parsed.seq);
    }
  }
}

function parseFrame(frame) {
  let seq = null;
  const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith("id:")) seq = Number(line.slice(3).trim());
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (seq === null || data.length === 0) return null;
  return { seq, event: JSON.parse(data.join("\n")) };
}

export const EVENT_TYPES = [
  "run_started", "turn_started", "text_delta", "reasoning_delta", "message_completed",
  "tool_call_started", "tool_call_completed", "handoff", "turn_ended", "context_compacted",
  "run_completed", "run_failed", "user_message_queued", "user_message_injected",
];

// Follow a live run with EventSource (GET, cookie auth); closes itself at the terminal event.
export function follow(chatId, after, onEvent) {
  const source = new EventSource(chatPath(chatId, `/events?after=${Number(after) || 0}`));
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "run_completed" || event.type === "run_failed") source.close();
      onEvent(event, Number(message.lastEventId));
    });
  }
  source.onerror = () => {
    // the run ended between the page load and the connection: reload the stored chat
    if (source.readyState === EventSource.CLOSED) onEvent({ type: "follow_closed" }, 0);
  };
  return source;
}
