// An answer's actions: Copy (its Markdown source) and Branch in new chat. Each button has
// data-action="<id>", under the answer's data-part="message-actions".

import DOMPurify from "./vendor/purify.es.js";
import { messageActionsFor } from "./extensions.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

function action(id, label, onClick) {
  const b = el("button", "link", label);
  b.type = "button";
  b.dataset.action = id;
  b.dataset.testid = `action-${id}`;
  b.title = label;
  b.addEventListener("click", onClick);
  return b;
}

export function addAnswerActions(answer, { branch = null } = {}) {
  const text = answer.source();
  if (text) {
    const copy = action("copy", t("message.copy"), async () => {
      try {
        await navigator.clipboard.writeText(text);
        copy.textContent = t("message.copied");
        copy.dataset.copied = "true";
        setTimeout(() => { copy.textContent = t("message.copy"); delete copy.dataset.copied; }, 1500);
      } catch (_) { /* no clipboard (not a secure context): nothing to do */ }
    });
    answer.actions.prepend(copy);
  }
  if (branch) answer.actions.append(action("branch", t("message.branch"), branch));
}

// The extensions' message actions (window.lovia.registerMessageAction) for one message,
// drawn into their own span of the footer: again on each refreshMessageActions().
// msg: { sessionId, role, text, ref }. A run that throws shows its error as a toast.
export function drawExtensionActions(box, msg, toast) {
  const frozen = Object.freeze({ ...msg });
  const buttons = messageActionsFor(frozen).map(({ id, action }) => {
    const label = String(action.label || id);
    const b = el("button", "link ext-action");
    b.type = "button";
    b.dataset.action = id;
    b.title = label;
    b.setAttribute("aria-label", label);
    const icon = typeof action.icon === "string" ? action.icon : "";
    if (icon.trim().startsWith("<svg")) {
      b.append(DOMPurify.sanitize(icon, { USE_PROFILES: { svg: true }, RETURN_DOM_FRAGMENT: true }));
    } else b.textContent = icon || label;
    let pressed = false;
    try { pressed = Boolean(action.pressed && action.pressed(frozen)); } catch (_) { pressed = false; }
    if (action.pressed) b.setAttribute("aria-pressed", String(pressed));
    b.addEventListener("click", async () => {
      b.disabled = true;
      try { await action.run(frozen); } catch (err) { toast(String(err && err.message ? err.message : err), "error"); }
      finally { b.disabled = false; }
    });
    return b;
  });
  box.replaceChildren(...buttons);
}
