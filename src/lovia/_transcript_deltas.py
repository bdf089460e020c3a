"""Model deltas: what a ``Provider`` streams while the model answers (``lovia.transcript``
is their public home)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from ._transcript_entries import TranscriptEntry
from .usage import Usage

__all__ = [
    "EntryCompletedDelta",
    "FinishDelta",
    "ModelDelta",
    "ReasoningDelta",
    "TextDelta",
    "ToolCallDelta",
    "UsageDelta",
]


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
