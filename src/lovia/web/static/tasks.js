// The top bar's Tasks menu (issue 31): the open chat's background subagent tasks, the chats
// it owns (GET api/sessions?parent=), each with its agent and its last run's status. Picking
// one opens its chat. Hidden while the chat has none; read again when a chat opens and when
// a run ends (a run is what starts tasks).

import { getJSON } from "./api.js";
import { has, t } from "./i18n.js";
import { el } from "./render.js";

export class TasksMenu {
  constructor({ box, count, items }, openChat) {
    this.box = box;
    this.count = count;
    this.items = items;
    this.openChat = openChat;
    this.asked = null;
  }

  async show(chatId) {
    this.asked = chatId;
    let tasks = [];
    if (chatId) {
      try {
        tasks = await getJSON(`api/sessions?parent=${encodeURIComponent(chatId)}`);
      } catch (_) { tasks = []; } // a chat the server does not know yet has none
    }
    if (this.asked !== chatId) return; // another chat opened meanwhile
    this.box.hidden = tasks.length === 0;
    if (!tasks.length) this.box.open = false;
    this.count.textContent = String(tasks.length);
    this.items.replaceChildren(...tasks.map((task) => this.row(task)));
  }

  row(task) {
    const button = el("button", "task");
    button.type = "button";
    button.dataset.testid = "task";
    const status = task.last_run_status || "";
    button.append(el("span", "task-title", task.title || task.agent || task.id),
      el("span", "task-status muted", has(`tasks.${status}`) ? t(`tasks.${status}`) : status));
    button.title = task.agent || "";
    button.addEventListener("click", () => { this.box.open = false; this.openChat(task.id); });
    return button;
  }
}
