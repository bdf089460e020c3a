"""Transcript entries, the model deltas that produce them, and helpers over both.

Entries are immutable pydantic models discriminated by ``type``. Everything in lovia pairs a
``ToolResultEntry`` with its ``ToolCallEntry`` by ``call_id``, never by position. A run gives
each call of a model turn an id of its own (``unique_call_ids``) before the turn is saved, so
results, which are recorded as tools finish, can always tell which call they answer.

Entries are the stored form of a conversation; ``entries_to_messages`` gives the chat view
(``lovia.messages.Message``) and ``messages_to_entries`` goes back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_serializer

from .errors import UserError, UserTypeError
from .messages import AssistantTurn, Message, ToolCall
from .parts import (
    ContentPart,
    FilePart,
    ImagePart,
    TextPart,
    normalize_content,
    part_to_dict,
    text_of,
)
from .usage import Usage

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

Part = Annotated[Union[TextPart, ImagePart, FilePart], Field(discriminator="type")]  # noqa: UP007


class InvalidEntry(UserError, ValueError):
    """A dict that is not a transcript entry (also a ``ValueError``, as in lovia 0.9.119)."""


class _Entry(BaseModel):
    # unknown keys are ignored, so entries written by another lovia version still read
    model_config = ConfigDict(frozen=True, extra="ignore")


class InputEntry(_Entry):
    """A message from outside the model: the user's input, or a system note.

    ``role="assistant"`` seeds words for the model's side (a conversation written before
    this run): it reaches the model as an assistant message and the message views show it
    as one, but it stays an input, not something the model said in a run.
    """

    type: Literal["input"] = "input"
    role: Literal["system", "user", "assistant"] = "user"
    content: str | list[Part]

    @property
    def text(self) -> str:
        """The content as plain text (images and files as placeholders)."""
        return text_of(self.content)


class AssistantTextEntry(_Entry):
    """Text the model said."""

    type: Literal["assistant_text"] = "assistant_text"
    content: str
    id: str | None = None


class ReasoningEntry(_Entry):
    """Reasoning the model exposed (kept so providers that need it can send it back)."""

    type: Literal["reasoning"] = "reasoning"
    content: str
    id: str | None = None
    provider: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class ToolCallEntry(_Entry):
    """The model asked for a tool; ``arguments`` is the raw JSON text it sent."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: str = "{}"


class ToolResultEntry(_Entry):
    """What a tool returned for the call with the same ``call_id``.

    ``output`` is the text the model sees. ``raw`` is the tool's Python return value while
    the run is live (stored only when it is JSON-safe). ``parts`` holds images or files a
    tool returned; ``output`` is then their text projection.
    """

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    output: str
    is_error: bool = False
    raw: Any = None
    parts: list[Part] | None = None

    @field_serializer("raw")
    def _raw_json(self, value: Any) -> Any:
        return to_json_safe(value)


TranscriptEntry = Annotated[
    Union[InputEntry, AssistantTextEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry],  # noqa: UP007
    Field(discriminator="type"),
]

_ENTRY = TypeAdapter(TranscriptEntry)
_ENTRIES = TypeAdapter(list[TranscriptEntry])
_ENTRY_TYPES = (InputEntry, AssistantTextEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry)
_TYPE_NAMES = frozenset(("input", "assistant_text", "reasoning", "tool_call", "tool_result"))


def entry_to_dict(entry: TranscriptEntry) -> dict[str, Any]:
    """A JSON-safe dict for ``entry`` (``entry_from_dict`` reverses it).

    A tool result carries ``raw`` (``None`` when the value is not JSON-safe) and ``parts``
    only when it has some.
    """
    kind = type(entry)
    if kind is InputEntry:
        content = entry.content  # type: ignore[union-attr]
        return {
            "type": "input",
            "role": entry.role,  # type: ignore[union-attr]
            "content": content if isinstance(content, str) else [part_to_dict(p) for p in content],
        }
    if kind is ToolResultEntry:
        assert isinstance(entry, ToolResultEntry)
        out: dict[str, Any] = {
            "type": "tool_result",
            "call_id": entry.call_id,
            "output": entry.output,
            "is_error": entry.is_error,
            "raw": to_json_safe(entry.raw),
        }
        if entry.parts is not None:
            out["parts"] = [part_to_dict(p) for p in entry.parts]
        return out
    if kind is AssistantTextEntry:
        assert isinstance(entry, AssistantTextEntry)
        return {"content": entry.content, "id": entry.id, "type": "assistant_text"}
    if kind is ToolCallEntry:
        assert isinstance(entry, ToolCallEntry)
        return {
            "call_id": entry.call_id,
            "name": entry.name,
            "arguments": entry.arguments,
            "type": "tool_call",
        }
    return entry.model_dump(mode="json")


def entry_from_dict(data: dict[str, Any]) -> TranscriptEntry:
    """Rebuild an entry from ``entry_to_dict`` output (unknown keys are ignored); raises
    ``InvalidEntry`` (a ``UserError`` and a ``ValueError``) on a dict that is not one."""
    kind = data.get("type") if isinstance(data, dict) else None
    if isinstance(data, dict) and kind not in _TYPE_NAMES:
        raise InvalidEntry(
            f"Unknown entry type: {kind!r}",
            hint="entries need a 'type' of input, assistant_text, reasoning, tool_call or "
            "tool_result",
        )
    try:
        return _ENTRY.validate_python(data)
    except ValidationError as exc:
        raise InvalidEntry(
            f"not a transcript entry: {_short(data)}: {_first_error(exc)}",
            hint="entries need a 'type' of input, assistant_text, reasoning, tool_call or "
            "tool_result and that type's fields",
        ) from exc


def to_json_safe(value: Any) -> Any:
    """``value`` as JSON-safe data (pydantic models and dataclasses as dicts), or ``None``
    when some part of it cannot be JSON."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, BaseModel):
        try:
            return to_json_safe(value.model_dump(mode="json"))
        except Exception:
            return None
    if is_dataclass(value) and not isinstance(value, type):
        return to_json_safe(asdict(value))
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            safe = to_json_safe(item)
            if safe is None and item is not None:
                return None
            out[str(key)] = safe
        return out
    if isinstance(value, (list, tuple)):
        items: list[Any] = []
        for item in value:
            safe = to_json_safe(item)
            if safe is None and item is not None:
                return None
            items.append(safe)
        return items
    return None


def entries_to_json(entries: Sequence[TranscriptEntry]) -> bytes:
    """Serialize a list of entries to JSON bytes in one pass."""
    return _ENTRIES.dump_json(list(entries))


def entries_from_json(data: bytes | str) -> list[TranscriptEntry]:
    """Parse ``entries_to_json`` output; raises pydantic's ``ValidationError`` on bad data."""
    return _ENTRIES.validate_json(data)


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


def _short(data: Any, limit: int = 120) -> str:
    text = repr(data)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    return f"{loc}: {first.get('msg')}" if loc else str(first.get("msg"))


# -- model deltas: what a Provider streams ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's text, for streaming display."""

    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning, for streaming display."""

    text: str
    type: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call: ``index`` groups fragments of one call."""

    index: int
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""
    type: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True, slots=True)
class UsageDelta:
    """Tokens the call used so far: a provider may send several (running totals, as
    lovia 0.9.119 read them); the last one is the call's usage."""

    usage: Usage
    type: Literal["usage_delta"] = "usage_delta"


@dataclass(frozen=True, slots=True)
class FinishDelta:
    """Why the model stopped (``"stop"``, ``"tool_calls"``, ``"length"``, ...)."""

    reason: str | None = None
    type: Literal["finish_delta"] = "finish_delta"


@dataclass(frozen=True, slots=True)
class EntryCompletedDelta:
    """A whole entry of the answer; when a provider sends these they are authoritative."""

    entry: TranscriptEntry
    type: Literal["entry_completed_delta"] = "entry_completed_delta"


ModelDelta = Union[  # noqa: UP007
    TextDelta, ReasoningDelta, ToolCallDelta, UsageDelta, FinishDelta, EntryCompletedDelta
]
