// Settings (issue 31): always the General pane (this browser's preferences, general.js);
// with a config.json, also the config `lovia web` serves from, through /api/config: model
// profiles (add, duplicate, delete; keys are write-only, shown only as a masked hint), the
// chat / aux / vision roles, the web-search backend and its key, and the skill directories
// with what each holds, offered only when the server edits a config.json
// (/api/info features.model_config). Every value from the server is shown as text.

import { getJSON, send } from "./api.js";
import { action, choice, errorText, field, input, openDialog } from "./dialog.js";
import { generalPane } from "./general.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

const CONFIG_TABS = ["models", "roles", "search", "skills"];

export class SettingsDialog {
  // configurable: the server edits a config.json; chrome: chrome.js's language and theme setters
  constructor(button, { changed, toast, configurable, chrome }) {
    this.changed = changed; // after a save: the served agent may have a new model
    this.toast = toast;
    this.chrome = chrome;
    this.names = ["general", ...(configurable ? CONFIG_TABS : [])];
    button.addEventListener("click", () => this.open());
    // the setup notice's "Configure a model" (page.js)
    document.addEventListener("lovia-open-settings", (event) => {
      const tab = event.detail && event.detail.tab;
      if (this.view && this.view.dialog.open) this.view.close();
      this.open(this.names.includes(tab) ? tab : "general");
    });
  }

  open(tab = "general") {
    this.view = openDialog({ title: t("settings.title"), testid: "settings-dialog", wide: true });
    const bar = el("div", "panel-tabs");
    bar.setAttribute("role", "tablist");
    this.pane = el("div", "panel-pane");
    this.tabs = new Map(this.names.map((name) => {
      const b = action(t(`settings.${name}`), `settings-tab-${name}`, () => this.show(name), "small tab");
      b.setAttribute("role", "tab");
      bar.append(b);
      return [name, b];
    }));
    this.view.body.append(bar, this.pane);
    this.show(tab);
  }

  async show(name) {
    for (const [n, b] of this.tabs) b.setAttribute("aria-selected", String(n === name));
    this.current = name;
    if (name === "general") {
      const redraw = () => { this.view.close(); this.open("general"); };
      this.pane.replaceChildren(...generalPane(this.chrome, { say: this.view.say, redraw }));
      return;
    }
    try {
      const config = await getJSON("api/config");
      if (this.current !== name) return;
      const draw = { models: this.models, roles: this.roles, search: this.search, skills: this.skills }[name];
      this.pane.replaceChildren(...await draw.call(this, config));
    } catch (err) { this.view.say(errorText(err), "error"); }
  }

  // Save through `fn`, then say so and draw the tab again.
  async save(fn, done = t("settings.saved")) {
    try {
      await fn();
      this.view.say(done);
      if (this.changed) this.changed();
    } catch (err) { this.view.say(errorText(err), "error"); return; }
    await this.show(this.current);
  }

  models(config) {
    const list = el("ul", "panel-list");
    list.dataset.testid = "model-list";
    for (const m of config.models) {
      const li = el("li", "panel-item");
      li.dataset.testid = "model-profile";
      const main = el("div", "panel-item-main");
      const roles = Object.entries(config.roles).filter(([, v]) => v === m.id).map(([k]) => k);
      main.append(el("div", "schedule-input", `${m.name || m.model}${roles.length ? ` (${roles.join(", ")})` : ""}`));
      const key = m.api_key && m.api_key.set ? t("settings.keySet", { hint: m.api_key.hint || "" }) : t("settings.noKey");
      main.append(el("div", "panel-hint", [m.model, m.base_url || "", key].filter(Boolean).join(" · ")));
      const path = `api/config/models/${encodeURIComponent(m.id)}`;
      const actions = el("div", "panel-item-actions");
      actions.append(
        action(t("settings.edit"), "model-edit", () => edit(m)),
        action(t("settings.duplicate"), "model-duplicate", () => this.save(() => send("POST", `${path}/duplicate`))),
        action(t("settings.delete"), "model-delete", () => this.save(() => send("DELETE", path)), "small danger"),
      );
      li.append(main, actions);
      list.append(li);
    }
    if (!config.models.length) list.append(el("li", "panel-empty", t("settings.noModels")));
    const name = input("text", { placeholder: t("settings.name"), testid: "model-name-input" });
    const model = input("text", { placeholder: "gpt-4o-mini", testid: "model-id-input" });
    const base = input("url", { placeholder: "…/v1", testid: "model-base-input" });
    const key = input("password", { testid: "model-key-input" });
    key.autocomplete = "off";
    const vision = choice([["auto", t("settings.visionAuto")], ["on", t("settings.visionOn")],
      ["off", t("settings.visionOff")]], "auto", "model-vision");
    const extra = input("textarea", { placeholder: '{"reasoning_effort": "medium"}', testid: "model-extra" });
    let editing = null;
    const submit = action(t("settings.addModel"), "model-add", () => {
      if (!model.value.trim()) { this.view.say(t("settings.needModel"), "error"); return; }
      let extraBody = null;
      if (extra.value.trim()) {
        try { extraBody = JSON.parse(extra.value); } catch (_) { extraBody = undefined; }
        if (!extraBody || typeof extraBody !== "object" || Array.isArray(extraBody)) {
          this.view.say(t("settings.extraInvalid"), "error");
          return;
        }
      }
      const body = { model: model.value.trim(), vision: vision.value };
      if (name.value.trim()) body.name = name.value.trim();
      if (base.value.trim()) body.base_url = base.value.trim();
      if (key.value) body.api_key = key.value; // left empty: the stored key stays
      if (extraBody) body.extra_body = extraBody;
      const at = editing ? `api/config/models/${encodeURIComponent(editing.id)}` : "api/config/models";
      this.save(() => send(editing ? "PUT" : "POST", at, body));
    }, "small primary");
    // Test connection: a real request with the form's fields (an edited profile's stored key
    // when the key field is left empty), nothing saved; the answer is shown as text.
    const result = el("div", "panel-hint");
    result.dataset.testid = "model-test-result";
    result.hidden = true;
    const test = action(t("settings.test"), "model-test", async () => {
      if (!model.value.trim()) { this.view.say(t("settings.needModel"), "error"); return; }
      const body = { model: model.value.trim(), base_url: base.value.trim() || null };
      if (editing) body.profile_id = editing.id;
      if (key.value) body.api_key = key.value;
      test.disabled = true;
      result.hidden = false;
      result.className = "panel-hint";
      result.textContent = t("settings.testing");
      try {
        const answer = await send("POST", "api/config/test", body);
        const known = ["ok", "auth_failed", "unreachable", "unverifiable"].includes(answer.outcome);
        const lines = [known ? t(`settings.test.${answer.outcome}`) : String(answer.outcome)];
        if (answer.detail) lines.push(answer.detail);
        if (answer.note) lines.push(answer.note);
        result.textContent = lines.join(" · ");
        result.className = `panel-hint ${answer.outcome === "ok" ? "ok" : "warn"}`;
      } catch (err) {
        result.textContent = errorText(err);
        result.className = "panel-hint warn";
      }
      test.disabled = false;
    });
    const edit = (m) => {
      editing = m;
      result.hidden = true;
      name.value = m.name || "";
      model.value = m.model || "";
      base.value = m.base_url || "";
      key.value = "";
      key.placeholder = m.api_key && m.api_key.set ? t("settings.keySet", { hint: m.api_key.hint || "" }) : "";
      vision.value = m.vision || "auto";
      extra.value = m.extra_body && Object.keys(m.extra_body).length ? JSON.stringify(m.extra_body, null, 2) : "";
      submit.textContent = t("dialog.save");
      name.focus();
    };
    const form = el("div", "panel-form");
    form.dataset.testid = "model-form";
    form.append(field(t("settings.name"), name), field(t("settings.model"), model),
      field(t("settings.baseUrl"), base), field(t("settings.apiKey"), key, t("settings.keyHint")),
      field(t("settings.vision"), vision), field(t("settings.extra"), extra, t("settings.extraHint")), test, submit,
      result);
    return [list, form];
  }

  roles(config) {
    const options = [["", t("settings.none")], ...config.models.map((m) => [m.id, m.name || m.model])];
    const selects = {};
    const box = el("div", "panel-form");
    for (const role of ["chat", "aux", "vision"]) {
      selects[role] = choice(options, config.roles[role] || "", `role-${role}`);
      box.append(field(t(`settings.role.${role}`), selects[role], t(`settings.roleHint.${role}`)));
    }
    box.append(action(t("dialog.save"), "roles-save", () => this.save(() => send("PUT", "api/config/roles",
      Object.fromEntries(Object.entries(selects).map(([k, s]) => [k, s.value || null])))), "small primary"));
    return [box];
  }

  search(config) {
    const backend = choice([["auto", t("settings.searchAuto")], ["tavily", "Tavily"], ["ddg", "DuckDuckGo"],
      ["off", t("settings.searchOff")]], config.search.backend || "auto", "search-backend");
    const key = input("password", { testid: "search-key" });
    key.autocomplete = "off";
    const shown = config.search.tavily_api_key;
    const box = el("div", "panel-form");
    box.append(field(t("settings.searchBackend"), backend),
      field(t("settings.tavilyKey"), key, shown && shown.set ? t("settings.keySet", { hint: shown.hint || "" }) : t("settings.noKey")),
      action(t("dialog.save"), "search-save", () => {
        const body = { backend: backend.value };
        if (key.value) body.tavily_api_key = key.value;
        this.save(() => send("PUT", "api/config/search", body));
      }, "small primary"));
    return [box];
  }

  async skills() {
    const found = await getJSON("api/config/skills");
    const dirs = input("textarea", { value: found.roots.map((r) => r.path).join("\n"), testid: "skill-dirs" });
    const list = el("ul", "panel-list");
    list.dataset.testid = "skill-roots";
    for (const root of found.roots) {
      const li = el("li", "panel-item");
      li.dataset.testid = "skill-root";
      const main = el("div", "panel-item-main");
      main.append(el("div", "schedule-input", root.path));
      const what = root.exists ? t("settings.skillCount", { n: root.skills.length }) : t("settings.missingDir");
      main.append(el("div", "panel-hint", what));
      for (const s of root.skills) {
        const line = el("div", `panel-hint skill${s.shadowed ? " shadowed" : ""}`, `${s.name}: ${s.description}`);
        line.dataset.testid = "skill";
        main.append(line);
      }
      for (const p of root.problems) main.append(el("div", "panel-hint warn", `${p.dir}: ${p.error}`));
      li.append(main);
      list.append(li);
    }
    const box = el("div", "panel-form");
    box.append(field(t("settings.skillDirs"), dirs, t("settings.skillDirsHint")),
      action(t("dialog.save"), "skills-save", () => this.save(() => send("PUT", "api/config/skills",
        { dirs: dirs.value.split("\n").map((d) => d.trim()).filter(Boolean) })), "small primary"));
    return [box, list];
  }
}
