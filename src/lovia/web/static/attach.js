// Attachments in the composer (issue 31): files picked (or pasted, or dropped) are uploaded
// to the workspace's uploads/ at once and wait as chips above the message; the next message
// sends their workspace paths (the server checks each again). Offered while the chat's agent
// has a workspace; not while an answer streams (a message sent into a live run carries text
// only, so the chips wait for the next one).

import { t } from "./i18n.js";
import { el } from "./render.js";
import { rawUrl, upload } from "./workspace.js";

export class Attachments {
  constructor({ button, picker, box, composer }, { toast }) {
    this.button = button;
    this.picker = picker;
    this.box = box;
    this.toast = toast;
    this.files = []; // [{ path, name, mime, kind }]
    this.available = false;
    this.live = false;
    button.addEventListener("click", () => picker.click());
    picker.addEventListener("change", () => {
      this.add([...picker.files]);
      picker.value = "";
    });
    composer.addEventListener("paste", (ev) => {
      const files = [...(ev.clipboardData ? ev.clipboardData.files : [])];
      if (files.length && this.usable()) { ev.preventDefault(); this.add(files); }
    });
    composer.addEventListener("dragover", (ev) => { if (this.usable()) ev.preventDefault(); });
    composer.addEventListener("drop", (ev) => {
      const files = [...(ev.dataTransfer ? ev.dataTransfer.files : [])];
      if (files.length && this.usable()) { ev.preventDefault(); this.add(files); }
    });
  }

  usable() {
    return this.available && !this.live;
  }

  // The chat's agent has a workspace (or not): the button shows; chips of another agent go.
  setAvailable(available) {
    if (available !== this.available) this.clear();
    this.available = available;
    this.button.hidden = !available;
  }

  setLive(live) {
    this.live = live;
    this.button.disabled = live;
  }

  async add(files) {
    for (const file of files) {
      const chip = el("span", "attachment uploading", file.name);
      chip.dataset.testid = "attachment";
      this.box.append(chip);
      this.box.hidden = false;
      try {
        const made = await upload(file);
        this.files.push({ path: made.path, name: made.name, mime: made.mime, kind: made.kind });
        this.drawChip(chip, made);
      } catch (err) {
        chip.remove();
        this.box.hidden = !this.box.childElementCount;
        this.toast(`${t("attach.failed", { name: file.name })}: ${err.message || err}`, "error");
      }
    }
  }

  drawChip(chip, made) {
    chip.classList.remove("uploading");
    chip.replaceChildren();
    if (made.kind === "image") {
      const img = el("img", "attachment-thumb");
      img.src = rawUrl(made.path);
      img.alt = "";
      chip.append(img);
    }
    chip.append(el("span", "attachment-name", made.name));
    const remove = el("button", "link attachment-remove", "×");
    remove.type = "button";
    remove.dataset.testid = "attachment-remove";
    remove.setAttribute("aria-label", t("attach.remove"));
    remove.addEventListener("click", () => {
      this.files = this.files.filter((f) => f.path !== made.path);
      chip.remove();
      this.box.hidden = !this.box.childElementCount;
    });
    chip.append(remove);
  }

  // What the next message sends (and the chips go).
  take() {
    if (this.live || !this.files.length) return [];
    const taken = this.files;
    this.clear();
    return taken;
  }

  clear() {
    this.files = [];
    this.box.replaceChildren();
    this.box.hidden = true;
  }
}
