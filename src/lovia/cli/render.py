"""Printing entries and live events in a terminal."""

from __future__ import annotations

from typing import Any, TextIO

from .. import events as ev
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

__all__ = ["describe_entry", "plain", "print_event"]

PREVIEW_CHARS = 200


# control characters shown escaped: stored text is the model's and the tools' (untrusted), and
# raw, an ESC sequence in it would act on the terminal (clear it, retitle it, set the clipboard)
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


_CONTROLS_BUT_LINES = {c: e for c, e in _CONTROLS.items() if c not in (0x09, 0x0A)}


def plain(text: object, *, lines: bool = False) -> str:
    """``text`` with its control characters shown escaped: safe to print to a terminal
    (``lines``: tabs and line breaks kept)."""
    return str(text).translate(_CONTROLS_BUT_LINES if lines else _CONTROLS)


def _short(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = plain(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_entry(e: TranscriptEntry) -> str:
    """One line for an entry: who said it and (the start of) what."""
    if isinstance(e, InputEntry):
        return f"{e.role}: {_short(e.text)}"
    if isinstance(e, AssistantTextEntry):
        return f"assistant: {_short(e.content)}"
    if isinstance(e, ReasoningEntry):
        return f"reasoning: {_short(e.content)}"
    if isinstance(e, ToolCallEntry):
        # the name and id are the model's and the provider's too
        return f"tool call {plain(e.name)}({_short(e.arguments, 120)}) [{plain(e.call_id)}]"
    if isinstance(e, ToolResultEntry):
        flag = " (error)" if e.is_error else ""
        return f"tool result{flag} [{plain(e.call_id)}]: {_short(e.output)}"
    return repr(e)


def print_event(event: Any, out: TextIO) -> None:
    """Stream a run to the terminal: text as it comes, tool calls on their own lines."""
    if isinstance(event, ev.TextDelta):
        out.write(event.delta)
    elif isinstance(event, ev.MessageCompleted):
        if any(isinstance(e, AssistantTextEntry) for e in event.entries):
            out.write("\n")
    elif isinstance(event, ev.ToolCallStarted):
        out.write(f"  [tool] {event.call.name}({_short(event.call.arguments, 120)})\n")
    elif isinstance(event, ev.ToolCallCompleted):
        flag = " error" if event.is_error else ""
        out.write(f"  [tool{flag}] {event.call.name} -> {_short(event.output)}\n")
    elif isinstance(event, ev.HandoffOccurred):
        out.write(f"  [handoff] {event.from_agent} -> {event.to_agent}\n")
    elif isinstance(event, ev.RunFailed):
        out.write(f"\n[run failed: {event.error}]\n")
    out.flush()
