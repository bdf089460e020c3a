// The Files panel (issue 31): the chat's agent's workspace. Recent files (newest first) or
// one folder at a time; a file opens in a preview (text as text, raster images and PDF from
// the workspace itself) with a download link; Upload saves files under uploads/ (they are
// not attached to a message: the composer's button does that). File names and contents are
// shown as text. Above the files, the chat's background processes (its workspace session
// keeps them between runs): each with its state, a running one with a Kill button, so
// stopping a dev server never needs the model. Polled while one runs and the panel is open.

import { chatPath, getJSON, send } from "./api.js";
import { action, errorText, openDialog } from "./dialog.js";
import { t } from "./i18n.js";
import { state } from "./page.js";
import { el, markdown } from "./render.js";
import { rawUrl, upload, workspaceUrl } from "./workspace.js";

const IMAGE = /\.(png|jpe?g|gif|webp|bmp|ico|avif)$/i;
const MARKDOWN = /\.(md|markdown)$/i;

function size(n) {
  if (n === null || n === undefined) return "";
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
}

export class FilesPanel {
  constructor(button, { toast }) {
    this.button = button;
    this.toast = toast;
    button.addEventListener("click", () => this.open());
    this.seenAt = null;
    let timer = null;
    document.addEventListener("lovia-runs-changed", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.countNew(), 300);
    });
    // a tool card's "Open in Files" (render.js): the panel opens on that file
    document.addEventListener("lovia-open-file", (event) => {
      const path = event.detail && event.detail.path;
      if (typeof path !== "string" || !path) return;
      if (this.button.hidden) { this.toast(t("files.unavailable"), "error"); return; }
      this.open(path);
    });
  }

  // `agent`: whose workspace the panel shows; another one's is counted afresh.
  setAvailable(available, agent = null) {
    this.button.hidden = !available;
    if (agent === this.agent && this.seenAt !== null) return;
    this.agent = agent;
    this.seenAt = null;
    this.mark(0);
    if (available) this.countNew();
  }

  // The "new files" badge (0.9.119's): files Recent lists that were written since the panel
  // was last opened (or since the page loaded), by server time; counted again whenever a run
  // starts or ends.
  mark(n) {
    if (n > 0) {
      this.button.dataset.newFiles = String(n);
      this.button.title = t("files.newFiles", { n });
    } else {
      delete this.button.dataset.newFiles;
      this.button.removeAttribute("title");
    }
  }

  async countNew() {
    if (this.button.hidden) return;
    let items;
    try { items = await getJSON(workspaceUrl("/recent")); } catch (_) { return; }
    const times = items.filter((f) => !f.is_dir).map((f) => Number(f.mtime) || 0);
    if (this.seenAt === null) { this.seenAt = Math.max(0, ...times); return; }
    const open = this.view && this.view.dialog.open;
    if (open) { this.seenAt = Math.max(this.seenAt, ...times); return; }
    this.mark(times.filter((time) => time > this.seenAt).length);
  }

  // `file`: a path to preview at once (its folder listed when it is workspace-relative).
  open(file = null) {
    if (this.view && this.view.dialog.open) this.view.close();
    this.mark(0);
    this.countNew(); // seen (the panel is open by then): up to the newest file there is now
    this.view = openDialog({ title: t("files.title"), testid: "files-dialog", wide: true, part: "files-panel" });
    const bar = el("div", "panel-tabs");
    this.recentTab = action(t("files.recent"), "files-recent", () => this.recent(), "small tab");
    this.browseTab = action(t("files.browse"), "files-browse", () => this.browse("."), "small tab");
    const picker = el("input");
    picker.type = "file";
    picker.multiple = true;
    picker.hidden = true;
    picker.dataset.testid = "files-upload-input";
    picker.addEventListener("change", () => this.upload([...picker.files]).finally(() => { picker.value = ""; }));
    bar.append(this.recentTab, this.browseTab, action(t("files.upload"), "files-upload", () => picker.click()), picker);
    // Filter: the listed rows whose path holds the text (as 0.9.119's "Filter files…")
    this.filter = el("input", "files-filter");
    this.filter.type = "search";
    this.filter.placeholder = t("files.filter");
    this.filter.dataset.testid = "files-filter";
    this.filter.addEventListener("input", () => this.applyFilter());
    this.list = el("ul", "panel-list files-list");
    this.list.dataset.testid = "files-list";
    this.preview = el("div", "files-preview");
    this.preview.dataset.testid = "files-preview";
    this.preview.hidden = true;
    this.procs = el("div", "files-procs");
    this.procs.dataset.testid = "files-processes";
    this.procs.hidden = true;
    this.view.body.append(this.procs, bar, this.filter, this.list, this.preview);
    this.view.dialog.addEventListener("close", () => clearTimeout(this.procsTimer));
    if (file) {
      const relative = !/^([/~\\]|[A-Za-z]:)/.test(file);
      const cut = file.lastIndexOf("/");
      const listed = relative ? this.browse(cut > 0 ? file.slice(0, cut) : ".") : this.recent();
      listed.then(() => this.openFile(file));
    } else {
      this.recent();
    }
    this.refreshProcs();
  }

  // -- the chat's background processes ------------------------------------------------------

  async refreshProcs() {
    clearTimeout(this.procsTimer);
    const chatId = state.chatId;
    if (!chatId || !this.view.dialog.isConnected) return;
    let procs = [];
    try { procs = await getJSON(chatPath(chatId, "/processes")); } catch (_) { return; }
    if (chatId === state.chatId) this.showProcs(chatId, procs);
  }

  showProcs(chatId, procs) {
    this.procs.hidden = !procs.length;
    const running = procs.filter((p) => p.status === "running").length;
    const head = el("div", "files-procs-head", t("procs.title"));
    if (running) head.append(el("span", "count", ` ${running}`));
    this.procs.replaceChildren(head, ...procs.map((p) => this.procRow(chatId, p)));
    // a running process ends on its own schedule: look again while one runs
    if (running && this.view.dialog.isConnected) this.procsTimer = setTimeout(() => this.refreshProcs(), 5000);
  }

  procRow(chatId, p) {
    const row = el("div", "panel-item proc-row");
    row.dataset.testid = "process";
    row.dataset.status = p.status;
    const shown = p.status === "running" ? t("procs.running")
      : p.status === "killed" ? t("procs.killed") : t("procs.exited", { code: p.exit_code ?? "?" });
    const command = el("code", "proc-command", p.command);
    command.title = p.command;
    row.append(command, el("span", "panel-hint", shown));
    if (p.status === "running") {
      const kill = action(t("procs.kill"), "process-kill", async () => {
        kill.disabled = true;
        try {
          const path = chatPath(chatId, `/processes/${encodeURIComponent(p.process_id)}/kill`);
          const procs = await (await send("POST", path)).json();
          if (chatId === state.chatId) this.showProcs(chatId, procs);
        } catch (err) {
          kill.disabled = false;
          this.view.say(errorText(err), "error");
        }
      }, "small");
      row.append(kill);
    }
    return row;
  }

  tab(which) {
    this.recentTab.setAttribute("aria-selected", String(which === "recent"));
    this.browseTab.setAttribute("aria-selected", String(which === "browse"));
  }

  async recent() {
    this.tab("recent");
    await this.show(() => getJSON(workspaceUrl("/recent")), null);
  }

  async browse(path) {
    this.tab("browse");
    this.folder = path;
    await this.show(() => getJSON(workspaceUrl("/files", { path })), path);
  }

  async show(load, folder) {
    this.preview.hidden = true;
    try {
      const items = await load();
      const rows = [];
      if (folder && folder !== ".") {
        const up = folder.split("/").slice(0, -1).join("/") || ".";
        rows.push(this.row({ path: up, is_dir: true }, "..", () => this.browse(up)));
      }
      for (const f of items) {
        const name = folder ? f.path.split("/").pop() : f.path;
        rows.push(this.row(f, f.is_dir ? `${name}/` : name,
          () => (f.is_dir ? this.browse(f.path) : this.openFile(f.path))));
      }
      if (!items.length) rows.push(el("li", "panel-empty", t("files.empty")));
      this.list.replaceChildren(...rows);
      this.applyFilter();
    } catch (err) { this.view.say(errorText(err), "error"); }
  }

  applyFilter() {
    const wanted = this.filter.value.trim().toLowerCase();
    for (const li of this.list.querySelectorAll(".file-row")) {
      li.hidden = Boolean(wanted) && li.dataset.name !== ".." && !li.dataset.path.toLowerCase().includes(wanted);
    }
  }

  row(f, label, onOpen) {
    const li = el("li", "panel-item file-row");
    li.dataset.path = String(f.path);
    li.dataset.name = label;
    li.dataset.testid = f.is_dir ? "folder" : "file";
    const open = el("button", "link file-open", label);
    open.type = "button";
    open.addEventListener("click", onOpen);
    li.append(open, el("span", "panel-hint", f.is_dir ? "" : size(f.size)));
    return li;
  }

  async openFile(path) {
    const box = this.preview;
    box.hidden = false;
    const head = el("div", "files-preview-head");
    head.append(el("strong", null, path));
    const link = el("a", "small", t("files.download"));
    link.href = rawUrl(path, { download: true });
    link.download = "";
    link.dataset.testid = "files-download";
    head.append(link);
    box.replaceChildren(head);
    if (IMAGE.test(path)) {
      const img = el("img", "files-image");
      img.src = rawUrl(path);
      img.alt = path;
      img.dataset.testid = "files-image";
      box.append(img);
      return;
    }
    try {
      const read = await getJSON(workspaceUrl("/file", { path }));
      const pre = el("pre", "files-text", read.binary ? t("files.binary") : read.content);
      pre.dataset.testid = "files-text";
      box.append(pre);
      if (!read.binary && MARKDOWN.test(path)) {
        // Markdown reads rendered (sanitized as a reply is, its workspace-relative images from
        // the workspace), as on 0.9.119; Source shows the text itself.
        const shown = el("div", "md files-markdown");
        shown.dataset.testid = "files-markdown";
        markdown(shown, read.content);
        pre.hidden = true;
        const toggle = action(t("files.source"), "files-source-toggle", () => {
          pre.hidden = !pre.hidden;
          shown.hidden = !pre.hidden;
          toggle.textContent = pre.hidden ? t("files.source") : t("files.rendered");
        });
        head.insertBefore(toggle, link);
        box.append(shown);
      }
      if (read.truncated) box.append(el("div", "panel-hint", t("files.truncated", { n: read.total_lines })));
    } catch (err) { box.append(el("div", "panel-hint warn", errorText(err))); }
  }

  async upload(files) {
    for (const file of files) {
      try {
        const made = await upload(file);
        this.view.say(t("files.uploaded", { path: made.path }));
      } catch (err) { this.view.say(`${file.name}: ${errorText(err)}`, "error"); }
    }
    await this.recent();
  }
}
