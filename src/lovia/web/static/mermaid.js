// Mermaid diagrams in answers (```mermaid fenced blocks), drawn by the vendored Mermaid,
// loaded the first time a diagram is shown. Mermaid runs with securityLevel "strict" (labels
// are text, no click handlers) and SVG labels; its SVG is sanitized and shown as an <img>
// from a data: URL, where nothing in it can run or load anything. Until it is drawn (while
// the answer still streams, or when it does not parse) the block stays code.

import DOMPurify from "./vendor/purify.es.js";

const SCRIPT = new URL("./vendor/mermaid.min.js", import.meta.url).href;
let library = null;

function load() {
  library ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = SCRIPT;
    script.onload = () => resolve(globalThis.mermaid);
    script.onerror = reject;
    document.head.append(script);
  });
  return library;
}

const drawn = new Map(); // theme + source -> Promise<data URL | null>
let counter = 0;

function svgUrl(source, dark) {
  const key = `${dark ? "dark" : "light"}\n${source}`;
  if (!drawn.has(key)) {
    drawn.set(key, load().then(async (mermaid) => {
      mermaid.initialize({
        startOnLoad: false, securityLevel: "strict", theme: dark ? "dark" : "default",
        htmlLabels: false, flowchart: { htmlLabels: false }, suppressErrorRendering: true,
      });
      counter += 1;
      const { svg } = await mermaid.render(`lovia-mermaid-${counter}`, source);
      const fragment = DOMPurify.sanitize(svg, {
        USE_PROFILES: { svg: true, svgFilters: true }, ADD_TAGS: ["style"],
        FORBID_TAGS: ["foreignObject", "a"], RETURN_DOM_FRAGMENT: true,
      });
      const root = fragment.querySelector("svg");
      if (!root) return null;
      const box = root.viewBox && root.viewBox.baseVal;
      if (box && box.width > 0) { // its own size, so the image is not stretched to the column
        root.setAttribute("width", String(Math.ceil(box.width)));
        root.setAttribute("height", String(Math.ceil(box.height)));
        root.style.removeProperty("max-width");
      }
      // serialized as XML: an image needs the SVG namespace, which the serializer writes
      const clean = new XMLSerializer().serializeToString(root);
      return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(clean)}`;
    }).catch(() => null));
  }
  return drawn.get(key);
}

// blocks and langs line up as in highlight.js (otherwise nothing is drawn).
export function drawDiagrams(root, langs) {
  const blocks = [...root.querySelectorAll("pre > code")];
  if (blocks.length !== langs.length) return;
  const dark = document.documentElement.dataset.theme === "dark";
  blocks.forEach((code, i) => {
    if ((langs[i] || "").toLowerCase() !== "mermaid") return;
    const pre = code.parentElement;
    const source = code.textContent;
    pre.dataset.mermaid = "pending";
    svgUrl(source, dark).then((url) => {
      if (!pre.isConnected) return;
      if (!url) { pre.dataset.mermaid = "code"; return; }
      const img = document.createElement("img");
      img.className = "mermaid-diagram";
      img.dataset.testid = "mermaid";
      img.alt = source;
      img.src = url;
      pre.replaceWith(img);
    });
  });
}
