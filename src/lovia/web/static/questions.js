// ask_human: while the run waits for a person's answer, its tool card carries the question,
// its suggested options and a text box; the answer goes to POST /api/chat/answer and the run
// goes on. The question and options come from the model: text only.

import { send } from "./api.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

export const QUESTION_TOOLS = new Set(["ask_human"]);

function parse(args) {
  try {
    const value = JSON.parse(args || "{}");
    return value && typeof value === "object" ? value : {};
  } catch (_) { return {}; }
}

export function questionCard(box, call, chatId, onError) {
  const args = parse(call.arguments);
  const card = el("div", "question-card");
  card.dataset.testid = "question";
  card.append(el("div", "question-text", String(args.question ?? "")));
  const input = el("textarea", "question-answer");
  input.rows = 2;
  input.setAttribute("aria-label", t("question.answer"));
  input.placeholder = t("question.placeholder");
  input.dataset.testid = "question-input";
  const submit = el("button", "small primary", t("question.send"));
  submit.type = "button";
  submit.dataset.testid = "question-send";
  const controls = [input, submit];
  const reply = async (text) => {
    const answer = text.trim();
    if (!answer) return;
    for (const c of controls) c.disabled = true;
    try {
      await send("POST", "api/chat/answer", { session_id: chatId, answer });
      card.classList.add("answered");
      card.append(el("div", "note muted", t("question.sent", { answer })));
    } catch (err) {
      for (const c of controls) c.disabled = false;
      onError(err);
    }
  };
  const options = Array.isArray(args.options) ? args.options : [];
  if (options.length) {
    const row = el("div", "question-options");
    for (const option of options) {
      const label = String((option && option.label) ?? option ?? "");
      const b = el("button", "small", label);
      b.type = "button";
      b.dataset.testid = "question-option";
      if (option && option.description) b.title = String(option.description);
      b.addEventListener("click", () => reply(label));
      controls.push(b);
      row.append(b);
    }
    card.append(row);
  }
  submit.addEventListener("click", () => reply(input.value));
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); reply(input.value); }
  });
  const bar = el("div", "edit-bar");
  bar.append(submit);
  card.append(input, bar);
  box.dataset.status = "awaiting";
  box.open = true;
  box.append(card);
  return card;
}
