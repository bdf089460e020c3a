"""Transcript entries, the model deltas that produce them, and helpers over both.

Entries are immutable pydantic models discriminated by ``type``. Everything in lovia pairs a
``ToolResultEntry`` with its ``ToolCallEntry`` by ``call_id``, never by position. A run gives
each call of a model turn an id of its own (``unique_call_ids``) before the turn is saved, so
results, which are recorded as tools finish, can always tell which call they answer.

Entries are the stored form of a conversation; ``entries_to_messages`` gives the chat view
(``lovia.messages.Message``) and ``messages_to_entries`` goes back.

The entry types live in ``_transcript_entries``, the deltas in ``_transcript_deltas``, the
conversions to and from messages in ``_transcript_messages``; this module is their public
home (as in lovia 0.9.119) and holds the helpers over a list of entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._transcript_deltas import (
    EntryCompletedDelta,
    FinishDelta,
    ModelDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from ._transcript_entries import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    entries_from_json,
    entries_to_json,
    entry_from_dict,
    entry_to_dict,
    to_json_safe,
)
from ._transcript_entries import InvalidEntry as InvalidEntry
from ._transcript_entries import Part as Part
from ._transcript_messages import (
    assistant_to_entries,
    entries_to_messages,
    input_to_entries,
    messages_to_entries,
    to_entries,
)
from ._transcript_messages import call_arguments as call_arguments

__all__ = [
    "AssistantTextEntry",
    "EntryCompletedDelta",
    "FinishDelta",
    "InputEntry",
    "ModelDelta",
    "ReasoningDelta",
    "ReasoningEntry",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallEntry",
    "ToolResultEntry",
    "TranscriptEntry",
    "UsageDelta",
    "assistant_to_entries",
    "drop_dangling_tool_calls",
    "entries_from_json",
    "entries_to_json",
    "entries_to_messages",
    "entry_from_dict",
    "entry_to_dict",
    "input_to_entries",
    "leading_system_count",
    "messages_to_entries",
    "safe_window",
    "split_system",
    "to_entries",
    "to_json_safe",
    "unique_call_ids",
]


def leading_system_count(entries: Sequence[TranscriptEntry]) -> int:
    """How many system inputs open ``entries``."""
    n = 0
    for e in entries:
        if isinstance(e, InputEntry) and e.role == "system":
            n += 1
        else:
            break
    return n


def split_system(
    entries: Sequence[TranscriptEntry],
) -> tuple[list[TranscriptEntry], list[TranscriptEntry]]:
    """The leading system inputs and the rest (both new lists)."""
    n = leading_system_count(entries)
    return list(entries[:n]), list(entries[n:])


def drop_dangling_tool_calls(entries: Iterable[TranscriptEntry]) -> list[TranscriptEntry]:
    """Remove every tool call that has no result with the same ``call_id``; keep the rest."""
    items = list(entries)
    dangling = {id(c) for c in dangling_tool_calls(items)}
    if not dangling:
        return items
    return [e for e in items if id(e) not in dangling]


def safe_window(
    entries: Sequence[TranscriptEntry], *, head: int = 0, tail: int
) -> list[TranscriptEntry]:
    """The first ``head`` and last ``tail`` entries, with no tool result cut from its call.

    When a kept result's call lies in the dropped middle, the tail grows back to that call
    (repeatedly, as the grown tail may hold more such results); a result whose call is in
    neither part is dropped. ``tail <= 0`` keeps only the head; when the parts meet, the
    whole list comes back. A negative ``head`` counts as 0.
    """
    items = list(entries)
    head = max(head, 0)
    if tail <= 0:
        return items[:head]
    if head + tail >= len(items):
        return items
    kept_calls = {e.call_id for e in items[:head] if isinstance(e, ToolCallEntry)}
    cut = len(items) - tail
    while True:
        tail_part = items[cut:]
        seen = kept_calls | {e.call_id for e in tail_part if isinstance(e, ToolCallEntry)}
        missing = {
            e.call_id for e in tail_part if isinstance(e, ToolResultEntry) and e.call_id not in seen
        }
        if not missing:
            break
        found = [
            i
            for i in range(head, cut)
            if isinstance(items[i], ToolCallEntry) and items[i].call_id in missing  # type: ignore[union-attr]
        ]
        if not found:  # the calls are nowhere to be had: drop their results instead
            kept = [
                e
                for e in tail_part
                if not (isinstance(e, ToolResultEntry) and e.call_id in missing)
            ]
            return items[:head] + kept
        # the nearest call for each missing id, and the tail grows back to the earliest one
        nearest = {items[i].call_id: i for i in found}  # type: ignore[union-attr]
        cut = min(nearest.values())
    if cut <= head:
        return items
    return items[:head] + items[cut:]


def dangling_tool_calls(entries: Iterable[TranscriptEntry]) -> list[ToolCallEntry]:
    """The tool calls in ``entries`` that no later result answers, in order.

    A result answers the latest earlier call with its ``call_id`` that is still open, so a
    ``call_id`` reused in a later turn is paired correctly.
    """
    open_calls: dict[str, list[ToolCallEntry]] = {}
    order: list[ToolCallEntry] = []
    answered: set[int] = set()
    for e in entries:
        if isinstance(e, ToolCallEntry):
            open_calls.setdefault(e.call_id, []).append(e)
            order.append(e)
        elif isinstance(e, ToolResultEntry):
            stack = open_calls.get(e.call_id)
            if stack:
                answered.add(id(stack.pop()))
    return [c for c in order if id(c) not in answered]


def unique_call_ids(entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """One model turn's entries with every call id unique within the turn.

    A model may (wrongly) send two calls with one id. The first keeps it; each later one gets
    ``<id>_<n>`` (the smallest ``n`` from 2 no call of the turn has), which is the id the
    transcript, the events, ``decide`` and the provider see from then on: the provider is sent
    the new id back with its result, as OpenAI and Anthropic both refuse a request whose calls
    or results repeat an id. Without a repeat the list itself comes back.
    """
    if len(entries) < 2:  # most turns: one text or one call
        return entries
    ids = [e.call_id for e in entries if isinstance(e, ToolCallEntry)]
    if len(set(ids)) == len(ids):
        return entries
    taken = set(ids)
    seen: set[str] = set()
    out: list[TranscriptEntry] = []
    for e in entries:
        if isinstance(e, ToolCallEntry):
            if e.call_id in seen:
                n = 2
                while f"{e.call_id}_{n}" in taken:
                    n += 1
                new = f"{e.call_id}_{n}"
                taken.add(new)
                e = e.model_copy(update={"call_id": new})
            seen.add(e.call_id)
        out.append(e)
    return out
