"""Summarize a span of the transcript with a model call (compaction's last stage)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    InputEntry,
    ReasoningEntry,
    TextDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

if TYPE_CHECKING:
    from ..providers.base import Provider

__all__ = ["SUMMARY_INSTRUCTIONS", "summarize", "transcript_text"]

SUMMARY_INSTRUCTIONS = (
    "You write the memory of a conversation that no longer fits the context window. "
    "Summarize the transcript below for the assistant who will continue it: the user's "
    "goals and constraints, decisions made, facts learned from tools (names, numbers, paths, "
    "ids), and what is still open. Quote tool result references that look like "
    'recall_tool_result("...") verbatim. Be concise; write only the summary.'
)
_RESULT_CHARS = 2_000  # per tool result in the summarizer's prompt


async def summarize(provider: Provider, summarizer: Any, span: Sequence[TranscriptEntry]) -> str:
    """The summary text of ``span``, from ``summarizer`` or else the run's ``provider``."""
    if summarizer is not None and not hasattr(summarizer, "stream"):
        value = summarizer(list(span))
        if inspect.isawaitable(value):
            value = await value
        return str(value or "").strip()
    model: Provider = summarizer if summarizer is not None else provider
    prompt = [
        InputEntry(role="system", content=SUMMARY_INSTRUCTIONS),
        InputEntry(role="user", content=transcript_text(span)),
    ]
    streamed: list[str] = []
    final: list[str] = []
    async for delta in model.stream(prompt):
        if isinstance(delta, TextDelta):
            streamed.append(delta.text)
        elif isinstance(delta, EntryCompletedDelta) and isinstance(delta.entry, AssistantTextEntry):
            final.append(delta.entry.content)
    return "".join(final or streamed).strip()


def transcript_text(span: Sequence[TranscriptEntry]) -> str:
    """``span`` as plain text for a summarizer prompt (long tool outputs shortened)."""
    lines: list[str] = []
    for e in span:
        if isinstance(e, InputEntry):
            lines.append(f"{e.role}: {e.text}")
        elif isinstance(e, AssistantTextEntry):
            lines.append(f"assistant: {e.content}")
        elif isinstance(e, ToolCallEntry):
            lines.append(f"assistant called {e.name}({e.arguments}) [call id {e.call_id}]")
        elif isinstance(e, ToolResultEntry):
            out = e.output
            if len(out) > _RESULT_CHARS:
                out = out[:_RESULT_CHARS] + f" [... {len(e.output) - _RESULT_CHARS} more]"
            lines.append(f"tool result for {e.call_id}{' (error)' if e.is_error else ''}: {out}")
        elif isinstance(e, ReasoningEntry):
            continue  # reasoning is the model's scratch work, not the conversation
    return "\n".join(lines)
