"""Stream events of a run, in the order a run emits them.

::

    RunStarted
    ( TurnStarted
      ( TextDelta | ReasoningDelta )*  MessageCompleted
      ContextCompacted?                   (before the model call, when the view was compacted)
      ( ToolCallStarted ToolCallCompleted )*   (per call; calls of one turn may interleave)
      HandoffOccurred?
      TurnEnded )*
    RunCompleted | RunFailed              (exactly one, always last)

A replay of a completed run emits only ``RunCompleted``. Every event has a ``type`` string
(the snake-case name) and ``to_dict()`` for JSON transports such as SSE.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Union

from .transcript import ToolCallEntry, ToolResultEntry, TranscriptEntry, entry_to_dict

if TYPE_CHECKING:
    from .run.result import RunResult

__all__ = [
    "ContextCompacted",
    "Event",
    "HandoffOccurred",
    "MessageCompleted",
    "ReasoningDelta",
    "RunCompleted",
    "RunEvent",
    "RunFailed",
    "RunStarted",
    "TextDelta",
    "ToolCallCompleted",
    "ToolCallStarted",
    "TurnEnded",
    "TurnStarted",
]


class RunEvent:
    """Base of every stream event."""

    type: ClassVar[str] = "event"
    terminal: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):  # type: ignore[arg-type]
            out[f.name] = _jsonable(getattr(self, f.name))
        return out


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return entry_to_dict(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


@dataclass(frozen=True, slots=True)
class RunStarted(RunEvent):
    type: ClassVar[str] = "run_started"
    run_id: str
    agent_name: str
    session_id: str | None = None
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class TurnStarted(RunEvent):
    type: ClassVar[str] = "turn_started"
    turn: int
    agent_name: str = ""


@dataclass(frozen=True, slots=True)
class TextDelta(RunEvent):
    type: ClassVar[str] = "text_delta"
    delta: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta(RunEvent):
    type: ClassVar[str] = "reasoning_delta"
    delta: str


@dataclass(frozen=True, slots=True)
class MessageCompleted(RunEvent):
    """The model's whole answer for one turn (text, reasoning and tool calls)."""

    type: ClassVar[str] = "message_completed"
    entries: list[TranscriptEntry]


@dataclass(frozen=True, slots=True)
class ToolCallStarted(RunEvent):
    type: ClassVar[str] = "tool_call_started"
    call: ToolCallEntry


@dataclass(frozen=True, slots=True)
class ToolCallCompleted(RunEvent):
    type: ClassVar[str] = "tool_call_completed"
    call: ToolCallEntry
    result: ToolResultEntry
    output: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class HandoffOccurred(RunEvent):
    type: ClassVar[str] = "handoff"
    from_agent: str
    to_agent: str


@dataclass(frozen=True, slots=True)
class TurnEnded(RunEvent):
    type: ClassVar[str] = "turn_ended"
    turn: int


@dataclass(frozen=True, slots=True)
class ContextCompacted(RunEvent):
    """The context policy shrank the view sent to the model (the transcript is unchanged)."""

    type: ClassVar[str] = "context_compacted"
    reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    notice: str = ""


@dataclass(frozen=True, slots=True)
class RunCompleted(RunEvent):
    type: ClassVar[str] = "run_completed"
    terminal: ClassVar[bool] = True
    result: RunResult

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "result": self.result.to_dict()}


@dataclass(frozen=True, slots=True)
class RunFailed(RunEvent):
    type: ClassVar[str] = "run_failed"
    terminal: ClassVar[bool] = True
    error: BaseException
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        err = self.error
        info = (
            err.to_dict()
            if hasattr(err, "to_dict")
            else {"type": type(err).__name__, "message": str(err), "hint": None}
        )
        return {"type": self.type, "error": info}


Event = Union[  # noqa: UP007
    RunStarted,
    TurnStarted,
    TextDelta,
    ReasoningDelta,
    MessageCompleted,
    ToolCallStarted,
    ToolCallCompleted,
    HandoffOccurred,
    TurnEnded,
    ContextCompacted,
    RunCompleted,
    RunFailed,
]
