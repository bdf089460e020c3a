"""Transcript entries: the immutable pydantic models a conversation is stored as, their
dict and JSON forms (``lovia.transcript`` is their public home)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_serializer

from .errors import UserError
from .parts import FilePart, ImagePart, TextPart, part_to_dict, text_of

__all__ = [
    "AssistantTextEntry",
    "InputEntry",
    "InvalidEntry",
    "ReasoningEntry",
    "ToolCallEntry",
    "ToolResultEntry",
    "TranscriptEntry",
    "entries_from_json",
    "entries_to_json",
    "entry_from_dict",
    "entry_to_dict",
    "to_json_safe",
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


_ENTRY_TYPES = (InputEntry, AssistantTextEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry)

TranscriptEntry = Annotated[
    Union[InputEntry, AssistantTextEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry],  # noqa: UP007
    Field(discriminator="type"),
]

if not TYPE_CHECKING:
    try:

        class _EntryUnion(type(TranscriptEntry), _root=True):
            """The discriminated union pydantic reads, that also answers
            ``isinstance(x, TranscriptEntry)`` as 0.9.119's plain union did (an ``Annotated``
            alias refuses the check)."""

            def __instancecheck__(self, obj: object) -> bool:
                return isinstance(obj, _ENTRY_TYPES)

            def __subclasscheck__(self, cls: type) -> bool:
                return issubclass(cls, _ENTRY_TYPES)

        TranscriptEntry.__class__ = _EntryUnion
    except Exception:  # a Python whose typing forbids it: the check raises, nothing else changes
        pass

_ENTRY = TypeAdapter(TranscriptEntry)
_ENTRIES = TypeAdapter(list[TranscriptEntry])
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
