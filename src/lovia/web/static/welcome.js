// The blank chat: a title, a few lines of description and suggested prompts (ChatUI's
// empty_title, empty_description, empty_examples). Clicking a prompt fills the composer.

import { t } from "./i18n.js";

// A template's welcome block may drop any of the three (no {{ super() }}): those are skipped.
export function drawWelcome(parts, config, onPick) {
  const { box, title, description, examples } = parts;
  if (!title || !description || !examples) return box;
  title.textContent = config.empty_title || t("welcome.title");
  const lines = config.empty_description && config.empty_description.length
    ? config.empty_description : [t("welcome.description")];
  description.replaceChildren(...lines.map((line) => {
    const p = document.createElement("p");
    p.textContent = line;
    return p;
  }));
  examples.replaceChildren(...(config.empty_examples || []).map((text) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "example";
    b.dataset.testid = "example";
    b.textContent = text;
    b.addEventListener("click", () => onPick(text));
    return b;
  }));
  return box;
}

export function showWelcome(box, shown) {
  box.hidden = !shown;
}
