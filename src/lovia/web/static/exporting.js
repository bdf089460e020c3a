// Export the open chat as a file (Markdown, JSON, text, HTML): the server writes it; the
// page only names the format. Branching copies a chat up to a message into a new chat.

import { chatPath, send } from "./api.js";

export function setupExport(menu, currentChat) {
  for (const button of menu.querySelectorAll("button[data-format]")) {
    button.addEventListener("click", () => {
      const id = currentChat();
      if (!id) return;
      const link = document.createElement("a");
      link.href = chatPath(id, `/export?format=${encodeURIComponent(button.dataset.format)}`);
      link.download = "";
      link.rel = "noopener";
      document.body.append(link);
      link.click();
      link.remove();
      menu.open = false;
    });
  }
}

// A new chat with the history of chatId before the user message `ref` (the whole chat when
// ref is null); resolves to the new chat's id.
export async function branch(chatId, ref) {
  const body = ref ? { ref } : {};
  const made = await send("POST", chatPath(chatId, "/fork"), body);
  return made.session_id;
}
