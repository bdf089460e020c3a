"""Transcript entries, the model deltas that produce them, and helpers over both.

Entries are immutable pydantic models discriminated by ``type``. Everything in lovia pairs a
``ToolResultEntry`` with its ``ToolCallEntry`` by ``call_id``, never by position.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import UserError
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
    "drop_dangling_tool_calls",
    "entries_from_json",
    "entries_to_json",
    "entry_from_dict",
    "entry_to_dict",
    "to_entries",
]


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InputEntry(_Entry):
    """A message from outside the model: the user's input, or a system note."""

    type: Literal["input"] = "input"
    role: Literal["system", "user"] = "user"
    content: str | list[dict[str, Any]]

    @property
    def text(self) -> str:
        """The content as plain text (text parts joined)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if isinstance(p, dict))


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
    """What a tool returned for the call with the same ``call_id``."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    output: str
    is_error: bool = False


TranscriptEntry = Annotated[
    Union[InputEntry, AssistantTextEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry],  # noqa: UP007
    Field(discriminator="type"),
]

_ENTRY = TypeAdapter(TranscriptEntry)
_ENTRIES = TypeAdapter(list[TranscriptEntry])
_ENTRY_TYPES = (InputEntry, AssistantTextEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry)


def entry_to_dict(entry: TranscriptEntry) -> dict[str, Any]:
    """A JSON-safe dict for ``entry`` (``entry_from_dict`` reverses it)."""
    return entry.model_dump(mode="json")


def entry_from_dict(data: dict[str, Any]) -> TranscriptEntry:
    """Rebuild an entry from ``entry_to_dict`` output; raises ``UserError`` on a bad dict."""
    try:
        return _ENTRY.validate_python(data)
    except ValidationError as exc:
        raise UserError(
            f"not a transcript entry: {_short(data)}: {_first_error(exc)}",
            hint="entries need a 'type' of input, assistant_text, reasoning, tool_call or "
            "tool_result and that type's fields",
        ) from exc


def entries_to_json(entries: Sequence[TranscriptEntry]) -> bytes:
    """Serialize a list of entries to JSON bytes in one pass."""
    return _ENTRIES.dump_json(list(entries))


def entries_from_json(data: bytes | str) -> list[TranscriptEntry]:
    """Parse ``entries_to_json`` output; raises pydantic's ``ValidationError`` on bad data."""
    return _ENTRIES.validate_json(data)


def to_entries(items: str | Iterable[Any]) -> list[TranscriptEntry]:
    """Turn a run's ``input`` (a string, messages or entries) into entries."""
    if isinstance(items, str):
        return [InputEntry(role="user", content=items)]
    out: list[TranscriptEntry] = []
    for item in items:
        if isinstance(item, _ENTRY_TYPES):
            out.append(item)
        elif isinstance(item, dict):
            out.append(_from_message(item))
        else:
            raise UserError(
                f"cannot use {type(item).__name__} as run input",
                hint="pass a string, transcript entries, or messages like "
                "{'role': 'user', 'content': '...'}",
            )
    return out


def _from_message(item: dict[str, Any]) -> TranscriptEntry:
    if "type" in item:
        return entry_from_dict(item)
    role = item.get("role")
    content = item.get("content")
    if role in ("user", "system") and isinstance(content, (str, list)):
        return InputEntry(role=role, content=content)
    if role == "assistant" and isinstance(content, str):
        return AssistantTextEntry(content=content)
    raise UserError(
        f"cannot read message {_short(item)}",
        hint="messages need role 'user', 'system' or 'assistant' and a content",
    )


def drop_dangling_tool_calls(entries: Iterable[TranscriptEntry]) -> list[TranscriptEntry]:
    """Remove every tool call that has no result with the same ``call_id``; keep the rest."""
    items = list(entries)
    dangling = {id(c) for c in dangling_tool_calls(items)}
    if not dangling:
        return items
    return [e for e in items if id(e) not in dangling]


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


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning, for streaming display."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call: ``index`` groups fragments of one call."""

    index: int
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageDelta:
    """Tokens the call used (a provider may send several; they add up)."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class FinishDelta:
    """Why the model stopped (``"stop"``, ``"tool_calls"``, ``"length"``, ...)."""

    reason: str | None


@dataclass(frozen=True, slots=True)
class EntryCompletedDelta:
    """A whole entry of the answer; when a provider sends these they are authoritative."""

    entry: TranscriptEntry


ModelDelta = Union[  # noqa: UP007
    TextDelta, ReasoningDelta, ToolCallDelta, UsageDelta, FinishDelta, EntryCompletedDelta
]
