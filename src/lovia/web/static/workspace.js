// The agent's workspace as the page reaches it (issue 31): the URLs of /api/workspace/...,
// uploads into uploads/, and the rewriting that shows a reply's workspace-relative images and
// links from the workspace itself. A path always travels as a query parameter of these
// routes, which resolve it inside the workspace under the agent's own read rules: a path in
// model output can name no other route and no file the agent could not read.

import DOMPurify from "./vendor/purify.es.js";
import { ApiError } from "./api.js";

let agentName = null; // the open chat's agent

export function setWorkspaceAgent(name) {
  agentName = name || null;
}

export function workspaceUrl(route, params = {}) {
  const query = new URLSearchParams();
  if (agentName) query.set("agent", agentName);
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) query.set(k, String(v));
  return `api/workspace${route}?${query}`;
}

// Shown inline by /api/workspace/raw (raster images and PDF); anything else downloads.
const INLINE = /\.(png|jpe?g|gif|webp|bmp|ico|avif|pdf)$/i;

export function rawUrl(path, { download = false } = {}) {
  return workspaceUrl("/raw", { path, download: download || !INLINE.test(path) ? 1 : null });
}

// Upload one File into uploads/: resolves to { path, name, mime, kind, size }.
export async function upload(file) {
  const form = new FormData();
  form.append("file", file, file.name);
  const response = await fetch(workspaceUrl("/upload"), { method: "POST", body: form, credentials: "same-origin" });
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    let hint = null;
    try {
      const d = (await response.json()).detail;
      if (d && typeof d === "object" && !Array.isArray(d)) { message = d.message || message; hint = d.hint || null; }
    } catch (_) { /* not JSON */ }
    throw new ApiError(response.status, message, hint);
  }
  return response.json();
}

// A path the reply names relative to the workspace: no scheme, not absolute, no fragment-only
// or query-only reference; "./" and "../" stay for the server to resolve (and refuse).
function workspacePath(value) {
  const v = String(value || "").trim();
  if (!v || /^[a-z][a-z0-9+.-]*:/i.test(v) || v.startsWith("/") || v.startsWith("#") || v.startsWith("?")) return null;
  try { return decodeURIComponent(v.split(/[?#]/)[0]); } catch (_) { return null; }
}

// Sanitized model output only: after DOMPurify has kept an <img> or <a>, a workspace-relative
// src or href is pointed at the workspace (while the open chat's agent has one).
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (!agentName) return;
  if (node.tagName === "IMG") {
    const path = workspacePath(node.getAttribute("src"));
    if (path) node.setAttribute("src", rawUrl(path));
  } else if (node.tagName === "A") {
    const path = workspacePath(node.getAttribute("href"));
    if (path) node.setAttribute("href", rawUrl(path));
  }
});
