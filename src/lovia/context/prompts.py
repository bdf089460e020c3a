"""The texts compaction's summary step uses: the instructions, the request framings, the
headings a summary must have, and the wrapper it is shown in."""

from __future__ import annotations

__all__ = [
    "REQUIRED_SECTIONS",
    "SUMMARY_FIRST_TEMPLATE",
    "SUMMARY_FOLD_TEMPLATE",
    "SUMMARY_SYSTEM_PROMPT",
    "SUMMARY_WRAPPER",
]

REQUIRED_SECTIONS: tuple[str, ...] = (
    "## Session intent",
    "## Current state",
    "## Key facts & decisions",
    "## Artifacts",
    "## Constraints & preferences",
    "## Next steps",
)
"""The headings every summary carries (checked case-insensitively)."""

SUMMARY_SYSTEM_PROMPT = (
    "You write the memory of a conversation that no longer fits the context window. "
    "Summarize it for the assistant who will continue it, under exactly these markdown "
    "headings, in this order:\n"
    + "\n".join(REQUIRED_SECTIONS)
    + "\nSession intent: what the user wants overall. Current state: where the work stands. "
    "Key facts & decisions: what was decided or learned from tools (names, numbers, paths, "
    "ids). Artifacts: files, urls and records made or used. Constraints & preferences: what "
    "the user asked for or ruled out. Next steps: what is still open. Quote tool result "
    'references that look like recall_tool_result("...") verbatim. Be concise; write only '
    "the summary."
)
"""The system prompt of a summary request."""

SUMMARY_FIRST_TEMPLATE = "Summarize this conversation.\n\n<transcript>\n{events}\n</transcript>"
"""The user message of a first summary (``{events}``: the span as text)."""

SUMMARY_FOLD_TEMPLATE = (
    "Here is the summary so far, then what happened since. Write one updated summary that "
    "keeps every fact of the old one that still matters.\n\n<summary>\n{prior}\n</summary>\n\n"
    "<new_events>\n{events}\n</new_events>"
)
"""The user message that folds new events (``{events}``) into a summary (``{prior}``)."""

SUMMARY_WRAPPER = (
    "[Summary of the earlier conversation and work, written to save context]\n{summary}"
)
"""How the summary is shown in the view (``{summary}``: its text)."""
