// What the open chat used: the agent's model by name, a ring for how full its context
// window was at the last run (its last prompt's tokens when the server gives them, else the
// run's input tokens: an upper bound), and the chat's tokens in all (the run records' usage).

import { getJSON } from "./api.js";
import { t } from "./i18n.js";

const format = (n) => Number(n || 0).toLocaleString();

// The chat's run records, newest first (null when the server gives none).
export function runRecords(chatId) {
  return getJSON(`api/runs/history?session_id=${encodeURIComponent(chatId)}&limit=500`).catch(() => null);
}

export class UsageView {
  // parts: { ring, model }
  constructor(parts) {
    this.ring = parts.ring;
    this.model = parts.model;
    this.agents = new Map();
    this.serial = 0;
  }

  async load() {
    try {
      for (const a of await getJSON("api/agents")) this.agents.set(a.name, a);
    } catch (_) { /* an older server: no model names */ }
  }

  showAgent(name) {
    const agent = this.agents.get(name);
    this.model.textContent = agent && agent.model ? agent.model : "";
    this.model.dataset.testid = "model-name";
    this.agent = agent || null;
    return this.agent;
  }

  clear() {
    this.serial += 1;
    this.ring.hidden = true;
    this.model.title = "";
  }

  // records: the chat's run records (a promise, of null when they could not be read)
  async showChat(chatId, records = runRecords(chatId)) {
    const serial = ++this.serial;
    const runs = await records;
    if (!Array.isArray(runs) || serial !== this.serial) return;
    const used = runs.filter((r) => r.usage);
    const total = used.reduce((sum, r) => sum + (r.usage.total_tokens
      ?? (r.usage.input_tokens || 0) + (r.usage.output_tokens || 0)), 0);
    this.model.title = used.length ? t("usage.cost", { tokens: format(total) }) : "";
    this.model.dataset.tokens = String(total);
    const last = used[0] && used[0].usage;
    const window = this.agent && this.agent.context_window;
    if (!last || !window) { this.ring.hidden = true; return; }
    const prompt = last.last_input_tokens ?? last.input_tokens ?? 0;
    const pct = Math.min(100, Math.round((100 * prompt) / window));
    this.ring.hidden = false;
    this.ring.style.setProperty("--used", String(pct));
    this.ring.classList.toggle("high", pct >= 80);
    this.ring.dataset.used = String(pct);
    this.ring.title = t("usage.context", { used: format(prompt), window: format(window), pct });
    this.ring.setAttribute("aria-label", this.ring.title);
  }
}
