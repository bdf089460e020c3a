// Code blocks in answers, highlighted by the vendored highlight.js (core and a few
// languages; see vendor/manifest.json). It runs on the sanitized answer: each block's text
// is highlighted afresh (highlight.js escapes it) and the result is sanitized again to
// spans with highlight.js's classes only.

import DOMPurify from "./vendor/purify.es.js";
import hljs from "./vendor/highlight/core.js";
import bash from "./vendor/highlight/bash.min.js";
import c from "./vendor/highlight/c.min.js";
import cpp from "./vendor/highlight/cpp.min.js";
import css from "./vendor/highlight/css.min.js";
import diff from "./vendor/highlight/diff.min.js";
import go from "./vendor/highlight/go.min.js";
import java from "./vendor/highlight/java.min.js";
import javascript from "./vendor/highlight/javascript.min.js";
import json from "./vendor/highlight/json.min.js";
import markdown from "./vendor/highlight/markdown.min.js";
import plaintext from "./vendor/highlight/plaintext.min.js";
import python from "./vendor/highlight/python.min.js";
import rust from "./vendor/highlight/rust.min.js";
import shell from "./vendor/highlight/shell.min.js";
import sql from "./vendor/highlight/sql.min.js";
import typescript from "./vendor/highlight/typescript.min.js";
import xml from "./vendor/highlight/xml.min.js";
import yaml from "./vendor/highlight/yaml.min.js";

const LANGUAGES = { bash, c, cpp, css, diff, go, java, javascript, json, markdown, plaintext,
  python, rust, shell, sql, typescript, xml, yaml };
for (const [name, grammar] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, grammar);
hljs.configure({ ignoreUnescapedHTML: true });

const ONLY_SPANS = { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], KEEP_CONTENT: true };
const HLJS_CLASS = /^hljs-[\w-]+$/;

function spansOnly(html) {
  const box = document.createElement("div");
  box.innerHTML = DOMPurify.sanitize(html, ONLY_SPANS);
  for (const span of box.querySelectorAll("span")) {
    const keep = [...span.classList].filter((name) => HLJS_CLASS.test(name) || /^[\w-]+_$/.test(name));
    span.className = keep.join(" ");
  }
  return box.innerHTML;
}

// langs: the fenced blocks' language names, in order (from the Markdown, since the
// sanitizer drops the class marked writes). When the blocks on the page do not line up
// with them (raw <pre> in the answer), nothing is highlighted.
export function highlightBlocks(root, langs) {
  const blocks = [...root.querySelectorAll("pre > code")];
  if (blocks.length !== langs.length) return;
  blocks.forEach((code, i) => {
    const lang = (langs[i] || "").toLowerCase();
    if (!lang || !hljs.getLanguage(lang)) return;
    const out = hljs.highlight(code.textContent, { language: lang, ignoreIllegals: true });
    code.innerHTML = spansOnly(out.value);
    code.classList.add("hljs");
    code.dataset.lang = lang;
  });
}
