// Follow-up suggestions: after an answer, when the server makes them (create_app(followups=
// ...)), a few questions to ask next, as chips under the last answer. A chip fills the
// message box. Suggestions are text, never markup.

import { chatPath, send } from "./api.js";
import { el } from "./render.js";

// The suggestions last made in a chat stay under its answer when the chat is opened again
// (another chat and back, a reload), as on 0.9.119's page: kept in this browser, for the last
// MAX_KEPT chats, each with a signature of the answer they follow, so a changed answer (an
// edit, a regenerate, a new message) shows none until new ones are made.
const KEY = "lovia-followups-kept";
const MAX_KEPT = 50;

function hash(text) {
  let h = 5381;
  for (let i = 0; i < text.length; i += 1) h = ((h * 33) ^ text.charCodeAt(i)) >>> 0;
  return h.toString(36);
}

// The signature of a chat's last exchange ({index, answer}): its place and its answer's text.
export function exchangeSignature(exchange) {
  return `${exchange.index}:${hash(exchange.answer.source() || "")}`;
}

function readKept() {
  try {
    const kept = JSON.parse(localStorage.getItem(KEY) || "[]");
    return Array.isArray(kept) ? kept : [];
  } catch (_) { return []; }
}

function keep(chatId, signature, questions) {
  const kept = readKept().filter((k) => k && k.chat !== chatId);
  kept.push({ chat: chatId, sig: signature, questions: questions.map(String) });
  try { localStorage.setItem(KEY, JSON.stringify(kept.slice(-MAX_KEPT))); } catch (_) { /* full */ }
}

export function showKeptFollowups(answer, chatId, onPick, signature) {
  const found = readKept().find((k) => k && k.chat === chatId && k.sig === signature);
  if (found && Array.isArray(found.questions)) draw(answer, found.questions, onPick);
}

export async function showFollowups(answer, chatId, onPick, stillCurrent, signature = null) {
  let made;
  try {
    made = await send("POST", chatPath(chatId, "/followups"));
  } catch (_) { return; } // suggestions are a nicety: a failure shows nothing
  const questions = (made && made.followups) || [];
  if (!questions.length) return;
  if (signature) keep(chatId, signature, questions);
  if (!stillCurrent()) return;
  draw(answer, questions, onPick);
}

function draw(answer, questions, onPick) {
  for (const old of answer.node.querySelectorAll(":scope > .followups")) old.remove();
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
