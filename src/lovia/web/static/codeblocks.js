// A code block's own bar in an answer (issue 31, as 0.9.119's): its language as a label and
// a Copy button. Both are built here, as text, after the answer was sanitized: the label is
// the fenced block's language name put in with textContent, never markup from the answer.

import { t } from "./i18n.js";

// langs: the fenced blocks' language names, in order, as highlight.js gets them; when the
// blocks on the page do not line up with them, the blocks get Copy but no label.
export function addCodeBars(root, langs) {
  const blocks = [...root.querySelectorAll("pre > code")];
  const lined = blocks.length === langs.length;
  blocks.forEach((code, i) => {
    const lang = lined ? String(langs[i] || "").toLowerCase() : "";
    if (lang === "mermaid") return; // a diagram, drawn by mermaid.js
    const pre = code.parentElement;
    pre.classList.add("code-block");
    const bar = document.createElement("div");
    bar.className = "code-bar";
    if (lang) {
      const label = document.createElement("span");
      label.className = "code-lang";
      label.dataset.testid = "code-lang";
      label.textContent = lang;
      bar.append(label);
    }
    const copy = document.createElement("button");
    copy.type = "button";
    copy.className = "code-copy";
    copy.dataset.testid = "code-copy";
    copy.textContent = t("code.copy");
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(code.textContent.replace(/\n$/, ""));
        copy.textContent = t("code.copied");
        setTimeout(() => { copy.textContent = t("code.copy"); }, 1500);
      } catch (_) { /* no clipboard (not a secure context): nothing to do */ }
    });
    bar.append(copy);
    pre.prepend(bar);
  });
}
