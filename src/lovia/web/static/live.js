// A streaming run's events, drawn into the open chat as they come: text and reasoning,
// tool cards (question cards for ask_human), messages sent into the live run, handoffs and
// how the run ended. app.js owns the chat's state and hands it in (page).

import { t } from "./i18n.js";
import { QUESTION_TOOLS, questionCard } from "./questions.js";
import { AnswerView, el, userBubble } from "./render.js";
import { stampRun } from "./footers.js";

// A stored message's content as text (a string, or parts with text).
export function contentText(content) {
  return typeof content === "string" ? content
    : Array.isArray(content) ? content.map((p) => (p && p.text) || "").join("") : "";
}

// One event of the run into page.state.answer; "stop" once the run is over (or the answer gone).
export function drawEvent(event, page) {
  const { state, box } = page;
  const answer = state.answer;
  if (!answer) return "stop";
  switch (event.type) {
    case "text_delta": answer.addText(event.delta); break;
    case "reasoning_delta": answer.addReasoningDelta(event.delta); break;
    case "message_completed":
      answer.endText();
      for (const e of event.entries) if (e.type === "reasoning") answer.addReasoning(e.content);
      break;
    case "tool_call_started": {
      const card = answer.addToolCall(event.call);
      if (QUESTION_TOOLS.has(event.call.name)) {
        questionCard(card, event.call, state.chatId, page.showError);
        page.waitsOnUser();
      }
      break;
    }
    case "tool_call_completed":
      answer.addToolResult(event.call.call_id, event.output, event.is_error);
      if (event.todos) state.todos.show(event.todos);
      break;
    case "user_message_queued": {
      const node = userBubble(box, contentText(event.content));
      node.classList.add("queued");
      node.dataset.testid = "queued-message";
      node.append(el("div", "note muted", t("run.queued")));
      state.joining.set(event.token, node);
      break;
    }
    case "user_message_injected": {
      // the run read it: it becomes part of this answer, which goes on below it
      let node = state.joining.get(event.token);
      state.joining.delete(event.token);
      if (!node) node = userBubble(box, contentText(event.content));
      node.classList.remove("queued");
      node.dataset.testid = "user-message";
      for (const n of node.querySelectorAll(".note")) n.remove();
      answer.endText();
      box.append(node);
      state.answer = new AnswerView(box);
      for (const waiting of state.joining.values()) box.append(waiting);
      break;
    }
    case "run_timing": stampRun(answer, { at: event.finished_at, duration: event.duration }); break;
    case "handoff": answer.note(t("run.handoff", { agent: event.to_agent })); break;
    case "context_compacted": answer.note(event.text || t("run.compacted"), "muted"); break;
    case "run_failed":
      state.runEnd = { status: event.stopped ? "cancelled" : "error", usage: null };
      if (event.stopped) {
        state.stoppedTools = answer.unfinishedCalls();
        answer.mark("stopped");
      }
      else if (event.error && event.error.type === "ApprovalPending") answer.note(t("approval.waitingNote"), "muted");
      else answer.note(t("run.failed", { error: event.error.message }), "error");
      page.finish();
      return "stop";
    case "run_completed":
      if (event.next_run_id) page.ownRun(event.next_run_id);
      state.runEnd = { status: "done", usage: event.usage || null };
      stampRun(answer, { usage: event.usage });
      page.finish();
      return "stop";
    default: break;
  }
  page.scrollDown();
  return null;
}
