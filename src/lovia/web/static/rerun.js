// "Re-run from here" on a user message (issue 33): the chat up to just before that message is
// forked into a new chat (the store's atomic fork; this chat stays as it is), the new chat
// opens and the message is sent again there. The fork is named by the page, so a second click
// that races the first is refused by the server (409) instead of making a second chat.

import { ApiError, chatPath, newChatId, send } from "./api.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

// The button, in the user message's own actions row (made when the bubble has none).
export function addRerunButton(userNode, onClick) {
  let actions = userNode.querySelector(":scope > .actions");
  if (!actions) {
    actions = el("div", "actions");
    userNode.append(actions);
  }
  const b = el("button", "link", t("message.rerun"));
  b.type = "button";
  b.title = t("message.rerunTitle");
  b.dataset.action = "rerun";
  b.dataset.testid = "action-rerun";
  b.addEventListener("click", () => { b.disabled = true; onClick(); });
  actions.append(b);
  return b;
}

// Fork chatId before the user message `ref` into a new chat; resolves to its id. The first
// message has nothing before it: the new chat then starts empty (nothing to copy).
export async function forkBefore(chatId, ref) {
  const id = newChatId();
  try {
    await send("POST", chatPath(chatId, "/fork"), { ref, new_id: id });
  } catch (err) {
    if (!(err instanceof ApiError && err.code === "nothing_to_fork")) throw err;
  }
  return id;
}
