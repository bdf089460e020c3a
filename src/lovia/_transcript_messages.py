"""Transcript entries to and from other forms: a run's input (strings, parts, message dicts,
``Message``s), and the chat view (``lovia.messages.Message``) a provider sends
(``lovia.transcript`` is their public home)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ._transcript_entries import (
    _ENTRY_TYPES,
    AssistantTextEntry,
    InputEntry,
    InvalidEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    _short,
    entry_from_dict,
)
from .errors import UserError, UserTypeError
from .messages import AssistantTurn, Message, ToolCall
from .parts import ContentPart, FilePart, ImagePart, TextPart, normalize_content, text_of

__all__ = [
    "assistant_to_entries",
    "call_arguments",
    "entries_to_messages",
    "input_to_entries",
    "messages_to_entries",
    "to_entries",
]


def to_entries(items: Any) -> list[TranscriptEntry]:
    """Turn a run's ``input`` into entries: a string, one part, or a list of messages
    (``lovia.messages.Message`` or dicts like ``{"role": "user", "content": "..."}``), parts
    and entries."""
    if isinstance(items, str):
        return [InputEntry(role="user", content=items)]
    if isinstance(items, (TextPart, ImagePart, FilePart, Message)):
        items = [items]
    if isinstance(items, _ENTRY_TYPES):
        items = [items]
    if isinstance(items, (bytes, bytearray, dict)) or not isinstance(items, Iterable):
        raise UserTypeError(
            f"run input must be a string or a list, got {type(items).__name__}",
            hint="pass a string, or a list of lovia.messages.user(...)/system(...) messages, "
            "message dicts or transcript entries ([] for no new input)",
        )
    out: list[TranscriptEntry] = []
    loose_parts: list[ContentPart] = []
    for item in items:
        if isinstance(item, (TextPart, ImagePart, FilePart)):
            loose_parts.append(item)
            continue
        if loose_parts:
            out.append(InputEntry(role="user", content=loose_parts))
            loose_parts = []
        if isinstance(item, _ENTRY_TYPES):
            out.append(item)
        elif isinstance(item, Message):
            out.extend(messages_to_entries([item]))
        elif isinstance(item, dict):
            out.extend(_from_message(item))
        else:
            raise UserError(
                f"cannot use {type(item).__name__} as run input",
                hint="pass a string, lovia.messages.user(...)/system(...) messages, or "
                "transcript entries",
            )
    if loose_parts:
        out.append(InputEntry(role="user", content=loose_parts))
    return out


def _from_message(item: dict[str, Any]) -> list[TranscriptEntry]:
    if "type" in item:
        return [entry_from_dict(item)]
    role = item.get("role")
    content = item.get("content")
    if role in ("user", "system") and isinstance(content, (str, list)):
        return [InputEntry(role=role, content=normalize_content(content) or "")]
    if role == "assistant":
        calls = [
            ToolCall(id=c["id"], name=c["name"], arguments=c.get("arguments", "{}"))
            for c in item.get("tool_calls") or ()
        ]
        return messages_to_entries([Message(role="assistant", content=content, tool_calls=calls)])
    if role == "tool" and item.get("tool_call_id"):
        return [ToolResultEntry(call_id=item["tool_call_id"], output=text_of(content))]
    raise UserError(
        f"cannot read message {_short(item)}",
        hint="messages need role 'user', 'system', 'assistant' or 'tool' and a content",
    )


# -- the chat view: entries <-> messages ------------------------------------------------------


def call_arguments(raw: str) -> str:
    """A tool call's arguments as the model view re-sends them: always a JSON object.

    A stream cut off mid-call, or a model that sent an array or a scalar, leaves arguments a
    provider refuses when the history is sent again (OpenAI wants JSON text, Anthropic an
    object). Those are wrapped as ``{"_raw": <the text as sent>}``; the stored entry keeps
    what the model sent.
    """
    if not raw:
        return "{}"
    known = _CALL_ARGUMENTS.get(raw)
    if known is not None:  # every model call re-sends the calls of the turns before it
        return known
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    sent = raw if isinstance(value, dict) else json.dumps({"_raw": raw}, ensure_ascii=False)
    if len(_CALL_ARGUMENTS) >= _MAX_CALL_ARGUMENTS:
        _CALL_ARGUMENTS.clear()
    _CALL_ARGUMENTS[raw] = sent
    return sent


_CALL_ARGUMENTS: dict[str, str] = {}
"""``call_arguments`` of argument texts seen lately (a pure function of the text)."""
_MAX_CALL_ARGUMENTS = 1024


def entries_to_messages(entries: Iterable[TranscriptEntry]) -> list[Message]:
    """The chat view of ``entries``: a model turn's reasoning, text and tool calls become one
    assistant message; every tool result a ``tool`` message; inputs stay as they are."""
    out: list[Message] = []
    text: str | None = None
    reasoning: str | None = None
    calls: list[ToolCall] = []

    def flush() -> None:
        nonlocal text, reasoning, calls
        if text is not None or reasoning is not None or calls:
            out.append(
                Message(role="assistant", content=text, reasoning=reasoning, tool_calls=calls)
            )
            text, reasoning, calls = None, None, []

    for e in entries:
        if isinstance(e, AssistantTextEntry):
            text = e.content if text is None else text + e.content
        elif isinstance(e, ToolCallEntry):
            calls.append(ToolCall(id=e.call_id, name=e.name, arguments=call_arguments(e.arguments)))
        elif isinstance(e, ToolResultEntry):
            flush()
            out.append(Message(role="tool", content=e.output, tool_call_id=e.call_id))
        elif isinstance(e, ReasoningEntry):
            reasoning = e.content if reasoning is None else reasoning + e.content
        elif isinstance(e, InputEntry):
            flush()
            content = e.content
            out.append(
                Message(role=e.role, content=content if isinstance(content, str) else list(content))
            )
    flush()
    return out


def messages_to_entries(messages: Iterable[Message]) -> list[TranscriptEntry]:
    """Entries for chat ``messages`` (any roles); a tool message's ``raw`` is not known."""
    out: list[TranscriptEntry] = []
    for m in messages:
        if m.role in ("system", "user"):
            content = normalize_content(m.content)
            out.append(InputEntry(role=m.role, content="" if content is None else content))
        elif m.role == "assistant":
            if m.reasoning:
                out.append(ReasoningEntry(content=m.reasoning))
            if m.content:
                out.append(AssistantTextEntry(content=text_of(m.content)))
            out.extend(
                ToolCallEntry(call_id=c.id, name=c.name, arguments=c.arguments)
                for c in m.tool_calls
            )
        elif m.role == "tool":
            out.append(ToolResultEntry(call_id=m.tool_call_id or "", output=text_of(m.content)))
        else:
            raise UserError(
                f"unknown message role {m.role!r}",
                hint="roles are 'system', 'user', 'assistant' and 'tool'",
            )
    return out


def input_to_entries(messages: Iterable[Message]) -> list[TranscriptEntry]:
    """``InputEntry``s for system and user messages (any other role is an error)."""
    out: list[TranscriptEntry] = []
    for m in messages:
        if m.role not in ("system", "user"):
            raise InvalidEntry(
                f"input messages are system or user messages, not {m.role!r}",
                hint="use messages_to_entries for a whole conversation",
            )
        out.extend(messages_to_entries([m]))
    return out


def assistant_to_entries(turn: AssistantTurn) -> list[TranscriptEntry]:
    """The entries of one model answer: its text (if any), then its tool calls."""
    out: list[TranscriptEntry] = []
    if turn.content:
        out.append(AssistantTextEntry(content=turn.content))
    out.extend(
        ToolCallEntry(call_id=c.id, name=c.name, arguments=c.arguments) for c in turn.tool_calls
    )
    return out
