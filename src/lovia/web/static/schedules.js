// The Schedules dialog (issue 31): every schedule with its prompt, trigger, next time and
// state; create one (a prompt, and every N seconds, a cron line or a time, with an optional
// stop condition, most fires and expiry, as 0.9.119's form has), pause or resume,
// run it now, open the chat of its last run, delete it. All through /api/schedules; a
// schedule's prompt and errors are shown as text.

import { getJSON, send } from "./api.js";
import { action, choice, errorText, field, input, openDialog } from "./dialog.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

const when = (epoch) => (epoch ? new Date(epoch * 1000).toLocaleString() : "");

// A datetime-local input's value for `epoch` (seconds), in local time.
function localValue(epoch) {
  const at = new Date(epoch * 1000);
  return new Date(at.getTime() - at.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function triggerText(s) {
  if (s.trigger_kind === "every") return t("sched.everyN", { n: s.trigger_expr });
  if (s.trigger_kind === "at") {
    const at = Number(s.trigger_expr);
    return t("sched.atTime", { time: Number.isFinite(at) ? when(at) : s.trigger_expr });
  }
  return `cron ${s.trigger_expr}`;
}

function stateText(s) {
  if (!s.active) return s.finished_reason ? t("sched.done") : t("sched.paused");
  return s.next_fire ? t("sched.next", { time: when(s.next_fire) }) : t("sched.active");
}

export class SchedulesDialog {
  constructor(button, { agent, openChat, toast }) {
    this.agent = agent; // () => the agent a new schedule goes to
    this.openChat = openChat;
    this.toast = toast;
    button.addEventListener("click", () => this.open());
  }

  open() {
    this.view = openDialog({ title: t("sched.title"), testid: "schedules-dialog", wide: true });
    this.list = el("ul", "panel-list");
    this.list.dataset.testid = "schedule-list";
    this.view.body.append(this.form(), this.list);
    this.shownHistories = new Set();
    // While open, a run starting or ending (a fire, Run now) redraws the list: its state,
    // count and history stay current, as 0.9.119's dialog does. The form is left alone.
    let timer = null;
    const changed = () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.refresh(), 150);
    };
    document.addEventListener("lovia-runs-changed", changed);
    this.view.dialog.addEventListener("close", () => {
      clearTimeout(timer);
      document.removeEventListener("lovia-runs-changed", changed);
    });
    this.refresh();
  }

  async refresh() {
    try {
      const all = await getJSON("api/schedules");
      this.list.replaceChildren(...all.map((s) => this.item(s)));
      for (const s of all) {
        if (!this.shownHistories.has(s.id)) continue;
        const box = [...this.list.querySelectorAll("[data-testid=schedule-history]")]
          .find((node) => node.dataset.schedule === s.id);
        if (box) { box.hidden = false; await this.history(s, box); }
      }
      if (!all.length) this.list.append(el("li", "panel-empty", t("sched.none")));
    } catch (err) { this.view.say(errorText(err), "error"); }
  }

  // One schedule: what it sends, when, and its actions.
  item(s) {
    const li = el("li", `panel-item${s.active ? "" : " paused"}`);
    li.dataset.testid = "schedule";
    const text = el("div", "panel-item-main");
    const prompt = el("div", "schedule-input", s.input);
    prompt.dataset.testid = "schedule-input";
    const meta = el("div", "panel-hint");
    meta.dataset.testid = "schedule-state";
    const bits = [triggerText(s), stateText(s)];
    if (s.max_fires) bits.push(t("sched.firesOf", { n: s.fire_count || 0, max: s.max_fires }));
    else if (s.fire_count) bits.push(t("sched.fires", { n: s.fire_count }));
    if (s.expires_at) bits.push(t("sched.expires", { time: when(s.expires_at) }));
    if (s.last_status) bits.push(t("sched.last", { status: s.last_status }));
    meta.textContent = bits.join(" · ");
    text.append(prompt, meta);
    if (s.until) {
      const until = el("div", "panel-hint", t("sched.untilShown", { text: s.until }));
      until.dataset.testid = "schedule-until";
      text.append(until);
    }
    if (s.last_error) text.append(el("div", "panel-hint warn", s.last_error));
    const actions = el("div", "panel-item-actions");
    const call = (fn) => async () => {
      try { await fn(); } catch (err) { this.view.say(errorText(err), "error"); }
      await this.refresh();
    };
    const path = `api/schedules/${encodeURIComponent(s.id)}`;
    actions.append(
      action(t("sched.edit"), "schedule-edit", () => this.edit(s)),
      action(s.active ? t("sched.pause") : t("sched.resume"), s.active ? "schedule-pause" : "schedule-resume",
        call(() => send("PATCH", path, { active: !s.active }))),
      action(t("sched.runNow"), "schedule-run", call(async () => {
        const fired = await send("POST", `${path}/run`);
        this.view.say(t("sched.fired"));
        this.lastFired = fired.session_id;
      })),
    );
    if (s.last_session_id) {
      actions.append(action(t("sched.lastRun"), "schedule-open", () => {
        this.view.close();
        this.openChat(s.last_session_id);
      }));
    }
    const history = el("ul", "panel-list schedule-history");
    history.dataset.testid = "schedule-history";
    history.dataset.schedule = s.id;
    history.hidden = true;
    text.append(history);
    actions.append(action(t("sched.history"), "schedule-history-toggle", async () => {
      history.hidden = !history.hidden;
      if (history.hidden) this.shownHistories.delete(s.id);
      else {
        this.shownHistories.add(s.id);
        await this.history(s, history);
      }
    }));
    actions.append(action(t("sched.delete"), "schedule-delete", call(async () => {
      if (!window.confirm(t("sched.deleteConfirm"))) return;
      await send("DELETE", path);
    }), "small danger"));
    li.append(text, actions);
    return li;
  }

  // The schedule's fires, newest first: when, how it ended, and its chat.
  async history(s, box) {
    try {
      const runs = await getJSON(`api/schedules/${encodeURIComponent(s.id)}/runs?limit=20`);
      box.replaceChildren(...runs.map((r) => {
        const li = el("li", "panel-hint schedule-run");
        li.dataset.testid = "schedule-run-record";
        // when · how it ended · how long · tokens (as 0.9.119's history lines)
        const bits = [when(r.started_at || r.finished_at), `${r.status}${r.error ? `: ${r.error}` : ""}`];
        if (r.finished_at && r.started_at && r.finished_at >= r.started_at) {
          const secs = r.finished_at - r.started_at;
          bits.push(secs >= 90 ? `${Math.round(secs / 60)} min` : `${Math.round(secs)} s`);
        }
        const used = r.usage && Number(r.usage.total_tokens);
        if (used) bits.push(t("sched.tokens", { n: used.toLocaleString() }));
        li.append(el("span", null, `${bits.join(" · ")} `));
        if (r.session_id) {
          li.append(action(t("sched.openChat"), "schedule-run-open", () => {
            this.view.close();
            this.openChat(r.session_id);
          }, "link"));
        }
        return li;
      }));
      if (!runs.length) box.append(el("li", "panel-empty", t("sched.historyNone")));
    } catch (err) { this.view.say(errorText(err), "error"); }
  }

  // Fill the form with schedule `s` to change it (null: back to a new schedule).
  edit(s) {
    const f = this.fields;
    this.editing = s;
    f.prompt.value = s ? s.input : "";
    f.kind.value = s ? s.trigger_kind : "every";
    f.expr.value = s && s.trigger_kind !== "at" ? s.trigger_expr : "3600";
    if (s && s.trigger_kind === "at") {
      const at = new Date(Number.isFinite(Number(s.trigger_expr)) ? Number(s.trigger_expr) * 1000 : s.trigger_expr);
      if (!Number.isNaN(at.getTime())) f.at.value = localValue(at.getTime() / 1000);
    }
    f.until.value = (s && s.until) || "";
    f.maxFires.value = s && s.max_fires ? String(s.max_fires) : "";
    f.expires.value = s && s.expires_at ? localValue(s.expires_at) : "";
    f.shape();
    f.add.textContent = s ? t("dialog.save") : t("sched.add");
    f.cancel.hidden = !s;
    if (s) f.prompt.focus();
  }

  // The new-schedule form: the prompt, the trigger kind and its expression.
  form() {
    const box = el("div", "panel-form");
    const prompt = input("textarea", { placeholder: t("sched.promptPlaceholder"), testid: "schedule-prompt" });
    const kind = choice([["every", t("sched.every")], ["cron", t("sched.cron")], ["at", t("sched.at")]],
      "every", "schedule-kind");
    const expr = input("text", { value: "3600", testid: "schedule-expr" });
    const at = input("datetime-local", { testid: "schedule-at" });
    const hint = el("span", "panel-hint");
    const shape = () => {
      expr.hidden = kind.value === "at";
      at.hidden = kind.value !== "at";
      hint.textContent = t(`sched.hint.${kind.value}`);
      if (kind.value === "every" && !/^\d+(\.\d+)?$/.test(expr.value)) expr.value = "3600";
      if (kind.value === "cron" && /^\d+$/.test(expr.value)) expr.value = "0 9 * * 1-5";
    };
    kind.addEventListener("change", shape);
    shape();
    const add = action(t("sched.add"), "schedule-add", async () => {
      const editing = this.editing;
      const text = prompt.value.trim();
      let trigger = expr.value.trim();
      if (kind.value === "at") {
        const picked = at.value ? new Date(at.value) : null;
        if (!picked || Number.isNaN(picked.getTime())) { this.view.say(t("sched.pickTime"), "error"); return; }
        trigger = picked.toISOString();
      }
      if (!text || !trigger) { this.view.say(t("sched.needBoth"), "error"); return; }
      const most = maxFires.value.trim();
      if (most && !/^[1-9]\d*$/.test(most)) { this.view.say(t("sched.badMaxFires"), "error"); return; }
      const ends = expires.value ? new Date(expires.value) : null;
      if (ends && Number.isNaN(ends.getTime())) { this.view.say(t("sched.pickTime"), "error"); return; }
      add.disabled = true;
      try {
        // Left empty: no limit (sent as null, so an edit clears a limit it had).
        const body = {
          input: text, trigger_kind: kind.value, trigger_expr: trigger,
          until: until.value.trim() || null,
          max_fires: most ? Number(most) : null,
          expires_at: ends ? ends.getTime() / 1000 : null,
        };
        if (editing) {
          await send("PATCH", `api/schedules/${encodeURIComponent(editing.id)}`, body);
          this.view.say(t("sched.saved"));
        } else {
          if (this.agent()) body.agent = this.agent();
          await send("POST", "api/schedules", body);
          this.view.say(t("sched.added"));
        }
        this.edit(null);
      } catch (err) { this.view.say(errorText(err), "error"); }
      add.disabled = false;
      await this.refresh();
    }, "small primary");
    const cancel = action(t("dialog.cancel"), "schedule-cancel", () => this.edit(null));
    cancel.hidden = true;
    const until = input("text", { placeholder: t("sched.untilPlaceholder"), testid: "schedule-until-input" });
    const maxFires = input("number", { placeholder: t("sched.unlimited"), testid: "schedule-max-fires" });
    maxFires.min = "1";
    const expires = input("datetime-local", { testid: "schedule-expires" });
    this.fields = { prompt, kind, expr, at, add, cancel, shape, until, maxFires, expires };
    const row = el("div", "panel-row");
    row.append(field(t("sched.triggerKind"), kind), field(t("sched.trigger"), el("span")), add, cancel);
    row.children[1].replaceChildren(el("span", "panel-label", t("sched.trigger")), expr, at);
    const limits = el("div", "panel-row");
    limits.append(field(t("sched.maxFires"), maxFires), field(t("sched.expiresAt"), expires));
    box.append(field(t("sched.prompt"), prompt), field(t("sched.until"), until), limits, row, hint);
    return box;
  }
}
