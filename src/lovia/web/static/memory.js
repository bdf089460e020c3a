// The Memory editor (issue 31): the open chat's agent's Notes, one "- fact" line each, as
// GET/PUT /api/memory hold them. The meter counts characters against the budget and warns
// before saving about lines the server would drop (only bullet lines are kept); "Tidy up"
// asks the server to merge and settle the notes now (one model call). Offered only for an
// agent that has the Memory plugin (GET /api/agents says `memory`).

import { getJSON, send } from "./api.js";
import { action, errorText, openDialog } from "./dialog.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

const dropped = (text) => text.split("\n").filter((l) => l.trim() && !l.trim().startsWith("- ")).length;

export class MemoryEditor {
  constructor(button, { agent, toast }) {
    this.button = button;
    this.agent = agent; // () => the open chat's agent name
    this.toast = toast;
    this.withMemory = new Set();
    button.addEventListener("click", () => this.open().catch((err) => toast(errorText(err), "error")));
  }

  // agents: GET /api/agents (each says whether it has `memory`)
  known(agents) {
    this.withMemory = new Set(agents.filter((a) => a.memory).map((a) => a.name));
    this.update();
  }

  // Shown only while the chosen agent has Memory.
  update() {
    this.button.hidden = !this.withMemory.has(this.agent());
  }

  path(suffix = "") {
    return `api/memory${suffix}?agent=${encodeURIComponent(this.agent())}`;
  }

  async open() {
    const name = this.agent();
    const view = openDialog({ title: `${t("memory.title")} · ${name}`, testid: "memory-dialog", wide: true });
    view.body.append(el("p", "panel-hint", t("memory.hint")));
    const editor = el("textarea", "memory-editor");
    editor.dataset.testid = "memory-editor";
    editor.setAttribute("aria-label", t("memory.title"));
    editor.placeholder = "- ";
    editor.spellcheck = false;
    editor.disabled = true;
    const meter = el("div", "panel-hint memory-meter");
    meter.dataset.testid = "memory-meter";
    let budget = 0;
    let dreamedAt = null;
    const sync = () => {
      const parts = [t("memory.chars", { used: editor.value.length, budget })];
      const n = dropped(editor.value);
      if (n) parts.push(t("memory.dropped", { n }));
      if (dreamedAt) parts.push(t("memory.dreamedAt", { when: new Date(dreamedAt * 1000).toLocaleDateString() }));
      meter.textContent = parts.join(" · ");
      meter.classList.toggle("warn", n > 0 || editor.value.length > budget);
    };
    const show = (data) => {
      budget = data.budget;
      dreamedAt = data.dreamed_at;
      editor.value = data.content;
      sync();
    };
    const busy = (on) => { for (const c of [editor, save, tidy]) c.disabled = on; };
    const save = action(t("dialog.save"), "memory-save", async () => {
      busy(true);
      try {
        show(await send("PUT", this.path(), { content: editor.value }));
        this.toast(t("memory.saved"));
        view.close();
      } catch (err) { view.say(errorText(err), "error"); busy(false); }
    }, "small primary");
    const tidy = action(t("memory.dream"), "memory-dream", async () => {
      busy(true);
      view.say(t("memory.dreaming"));
      try {
        const data = await send("POST", this.path("/dream"));
        show(data);
        view.say(t("memory.dreamed", { before: data.before, after: data.after }));
      } catch (err) { view.say(errorText(err), "error"); }
      busy(false);
    });
    const cancel = action(t("dialog.cancel"), "memory-cancel", () => view.close());
    const bar = el("div", "panel-actions");
    bar.append(tidy, cancel, save);
    view.body.append(editor, meter, bar);
    busy(true);
    editor.addEventListener("input", sync);
    editor.addEventListener("keydown", (ev) => {
      if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter" && !save.disabled) { ev.preventDefault(); save.click(); }
    });
    try {
      show(await getJSON(this.path()));
      busy(false);
      editor.focus();
    } catch (err) { view.say(errorText(err), "error"); }
  }
}
