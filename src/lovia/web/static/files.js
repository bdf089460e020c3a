// The Files panel (issue 31): the chat's agent's workspace. Recent files (newest first) or
// one folder at a time; a file opens in a preview (text as text, raster images and PDF from
// the workspace itself) with a download link; Upload saves files under uploads/ (they are
// not attached to a message: the composer's button does that). File names and contents are
// shown as text.

import { getJSON } from "./api.js";
import { action, errorText, openDialog } from "./dialog.js";
import { t } from "./i18n.js";
import { el } from "./render.js";
import { rawUrl, upload, workspaceUrl } from "./workspace.js";

const IMAGE = /\.(png|jpe?g|gif|webp|bmp|ico|avif)$/i;

function size(n) {
  if (n === null || n === undefined) return "";
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
}

export class FilesPanel {
  constructor(button, { toast }) {
    this.button = button;
    this.toast = toast;
    button.addEventListener("click", () => this.open());
  }

  setAvailable(available) {
    this.button.hidden = !available;
  }

  open() {
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
    this.list = el("ul", "panel-list files-list");
    this.list.dataset.testid = "files-list";
    this.preview = el("div", "files-preview");
    this.preview.dataset.testid = "files-preview";
    this.preview.hidden = true;
    this.view.body.append(bar, this.list, this.preview);
    this.recent();
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
    } catch (err) { this.view.say(errorText(err), "error"); }
  }

  row(f, label, onOpen) {
    const li = el("li", "panel-item file-row");
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
