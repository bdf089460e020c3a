// The todo panel: the latest list of the chat's todo_write calls (GET .../todos, and the
// stream's todo events while a run works), above the message box. Items are text.

import { chatPath, getJSON } from "./api.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

const MARK = { completed: "✓", in_progress: "▸", pending: "○" };

export class TodoPanel {
  constructor(box) {
    this.box = box;
    this.serial = 0;
  }

  clear() {
    this.serial += 1;
    this.show([]);
  }

  async load(chatId) {
    const serial = ++this.serial;
    let found = [];
    try { found = (await getJSON(chatPath(chatId, "/todos"))).todos || []; } catch (_) { return; }
    if (serial === this.serial) this.show(found);
  }

  show(todos) {
    const items = Array.isArray(todos) ? todos.filter((x) => x && typeof x === "object") : [];
    this.box.hidden = items.length === 0;
    const done = items.filter((x) => x.status === "completed").length;
    const head = el("div", "todo-head", t("todo.title", { done, total: items.length }));
    const list = el("ul", "todo-list");
    for (const item of items) {
      const status = String(item.status || "pending");
      const li = el("li", `todo ${status}`);
      li.dataset.testid = "todo";
      li.dataset.status = status;
      const text = status === "in_progress" && item.active_form ? item.active_form : item.content;
      li.append(el("span", "todo-mark", MARK[status] || "○"), el("span", "todo-text", String(text ?? "")));
      list.append(li);
    }
    this.box.replaceChildren(head, list);
  }
}
