// The sidebar's list of chats: pinned first, then the most recent; a search box (the
// server searches titles and ids); per chat Rename (in place: Enter saves, Escape cancels),
// Pin / Unpin and Delete. Titles and ids are text only.

import { chatIdProblem, chatPath, getJSON, send } from "./api.js";
import { t } from "./i18n.js";
import { el, visible } from "./render.js";

function iconButton(label, testid, text, onClick) {
  const b = el("button", "icon small", text);
  b.type = "button";
  b.title = label;
  b.setAttribute("aria-label", label);
  b.dataset.testid = testid;
  b.addEventListener("click", (ev) => { ev.stopPropagation(); onClick(); });
  return b;
}

export class ChatList {
  // parts: { list, search }; hooks: { current(), open(id), deleted(id), error(err) }
  constructor(parts, hooks) {
    this.list = parts.list;
    this.search = parts.search;
    this.hooks = hooks;
    this.query = "";
    this.serial = 0;
    let timer = null;
    this.search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        this.query = this.search.value.trim();
        this.refresh().catch(hooks.error);
      }, 150);
    });
  }

  async refresh() {
    if (this.list.querySelector(".chat-rename")) { this.stale = true; return; } // mid-rename
    this.stale = false;
    const serial = ++this.serial;
    const path = this.query ? `api/sessions?q=${encodeURIComponent(this.query)}` : "api/sessions";
    const chats = await getJSON(path);
    if (serial !== this.serial) return; // a newer refresh (another query) won
    // a rename begun while the list was on its way keeps its input: redraw when it ends
    if (this.list.querySelector(".chat-rename")) { this.stale = true; return; }
    this.list.replaceChildren();
    this.list.dataset.query = this.query;
    if (!chats.length) {
      const empty = el("li", "chat-empty muted", t(this.query ? "nav.noMatch" : "nav.noChats"));
      empty.dataset.testid = "chat-list-empty";
      this.list.append(empty);
    }
    for (const chat of chats) this.list.append(this.item(chat));
  }

  item(chat) {
    const item = el("li", chat.id === this.hooks.current() ? "active" : "");
    item.dataset.testid = "chat-item";
    if (chat.pinned) item.classList.add("pinned");
    const problem = chatIdProblem(chat.id);
    const usable = problem === null;
    const open = el("button", "chat-open", chat.title || t("chat.untitled"));
    open.type = "button";
    // the id a program stored it under: text, with invisible or direction-changing
    // characters shown as escapes (it must not pass for another id)
    open.title = visible(chat.id);
    if (usable) open.addEventListener("click", () => this.hooks.open(chat.id));
    else { open.disabled = true; open.title = `${problem}: it cannot be opened here`; }
    item.append(open);
    if (chat.pinned) {
      const pin = el("span", "pin-mark", "★");
      pin.title = t("chat.pinned");
      pin.dataset.testid = "pinned";
      item.append(pin);
    }
    if (chat.live) item.append(el("span", "badge live", t("chat.running")));
    else if (chat.pending) {
      item.append(el("span", "badge warn",
        chat.pending.awaiting_approval ? t("chat.needsApproval") : chat.pending.status));
    }
    if (!usable) return item;
    const tools = el("span", "chat-tools");
    tools.append(
      iconButton(t("chat.rename"), "rename-chat", "✎", () => this.rename(item, open, chat)),
      iconButton(chat.pinned ? t("chat.unpin") : t("chat.pin"), "pin-chat", chat.pinned ? "★" : "☆",
        () => this.patch(chat.id, { pinned: !chat.pinned })),
      iconButton(t("chat.delete"), "delete-chat", "×", () => this.remove(chat.id)),
    );
    item.append(tools);
    return item;
  }

  rename(item, open, chat) {
    if (item.querySelector("input")) return;
    const input = el("input", "chat-rename");
    input.type = "text";
    input.maxLength = 200;
    input.value = chat.title || "";
    input.dataset.testid = "rename-input";
    input.setAttribute("aria-label", t("chat.rename"));
    open.hidden = true;
    item.insertBefore(input, open);
    input.focus();
    input.select();
    let done = false;
    const close = () => {
      done = true;
      input.remove();
      open.hidden = false;
      if (this.stale) this.refresh().catch(this.hooks.error);
    };
    input.addEventListener("keydown", (ev) => {
      if (ev.isComposing) return;
      if (ev.key === "Enter") {
        ev.preventDefault();
        const title = input.value.trim();
        close();
        if (title && title !== chat.title) this.patch(chat.id, { title });
      } else if (ev.key === "Escape") {
        ev.preventDefault();
        close();
      }
    });
    input.addEventListener("blur", () => { if (!done) close(); });
  }

  async patch(id, body) {
    try {
      await send("PATCH", chatPath(id), body);
      await this.refresh();
      if (this.hooks.changed) this.hooks.changed(id);
    } catch (err) { this.hooks.error(err); }
  }

  async remove(id) {
    if (!confirm(t("chat.deleteConfirm"))) return;
    try {
      await send("DELETE", chatPath(id));
      await this.hooks.deleted(id);
      await this.refresh();
    } catch (err) { this.hooks.error(err); }
  }
}
