// Follow-up suggestions: after an answer, when the server makes them (create_app(followups=
// ...)), a few questions to ask next, as chips under the last answer. A chip fills the
// message box. Suggestions are text, never markup.

import { chatPath, send } from "./api.js";
import { el } from "./render.js";

export async function showFollowups(answer, chatId, onPick, stillCurrent) {
  let made;
  try {
    made = await send("POST", chatPath(chatId, "/followups"));
  } catch (_) { return; } // suggestions are a nicety: a failure shows nothing
  const questions = (made && made.followups) || [];
  if (!questions.length || !stillCurrent()) return;
  const box = el("div", "followups");
  box.dataset.part = "followups";
  for (const q of questions.slice(0, 5)) {
    const chip = el("button", "followup", String(q));
    chip.type = "button";
    chip.dataset.testid = "followup";
    chip.addEventListener("click", () => onPick(String(q)));
    box.append(chip);
  }
  answer.node.append(box);
}
