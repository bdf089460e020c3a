"""Stream events of a run, in the order a run emits them.

::

    RunStarted
    ( TurnStarted
      UserMessageInjected*                (messages pushed into the run's Mailbox)
      ContextCompacted?                   (before the model call, when the view was compacted)
      ( ModelRetrying OutputDiscarded? )*
      ( TextDelta | ReasoningDelta )*  MessageCompleted
      ( ApprovalRequired? ToolCallStarted ToolCallFailed? ToolCallCompleted )*
                                          (per call; calls of one turn may interleave)
      TurnEnded
      HandoffOccurred? )*
    RunCompleted | RunFailed              (exactly one, always last)

A replay of a completed run emits only ``RunCompleted``. Events are grouped under base
classes (``RunEvent``, ``TurnEvent``, ``DeltaEvent``, ``MessageEvent``, ``ToolEvent``,
``TransitionEvent``, ``ErrorEvent``, ``ContextEvent``, all under ``Event``) so a hook can
listen to a whole group. Every event has a ``type`` string (the snake-case name) and
``to_dict()`` for JSON transports such as SSE.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ._event_base import (
    ContextEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    MessageEvent,
    RunEvent,
    ToolEvent,
    TransitionEvent,
    TurnEvent,
    _call_dict,
    _error_dict,
    _jsonable,
    _name,
)
from .messages import ToolCall
from .transcript import TranscriptEntry

if TYPE_CHECKING:
    from ._run_types import RunResult
    from .agent import Agent
    from .approvals import ApprovalChannel

__all__ = [
    "ApprovalRequired",
    "CompactionNotice",
    "ContextCompacted",
    "ContextEvent",
    "DeltaEvent",
    "ErrorEvent",
    "Event",
    "HandoffOccurred",
    "MessageCompleted",
    "MessageEvent",
    "ModelRetrying",
    "OutputDiscarded",
    "ReasoningDelta",
    "RunCompleted",
    "RunEvent",
    "RunFailed",
    "RunStarted",
    "TextDelta",
    "ToolCallCompleted",
    "ToolCallFailed",
    "ToolCallStarted",
    "ToolEvent",
    "TransitionEvent",
    "TurnEnded",
    "TurnEvent",
    "TurnStarted",
    "UserMessageInjected",
]


@dataclass
class RunStarted(RunEvent):
    """The run began (also when it resumes a stored run: ``resumed=True``)."""

    type: ClassVar[str] = "run_started"
    agent: Agent
    run_id: str | None = field(default=None, kw_only=True)
    session_id: str | None = field(default=None, kw_only=True)
    resumed: bool = field(default=False, kw_only=True)

    @property
    def agent_name(self) -> str:
        return str(self.agent.name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "agent": self.agent.name,
            "agent_name": self.agent.name,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "resumed": self.resumed,
        }


@dataclass
class TurnStarted(TurnEvent):
    type: ClassVar[str] = "turn_started"
    agent: Agent
    turn: int

    @property
    def agent_name(self) -> str:
        return str(self.agent.name)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "agent": self.agent.name, "turn": self.turn}


@dataclass
class TurnEnded(TurnEvent):
    type: ClassVar[str] = "turn_ended"
    agent: Agent
    turn: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "agent": self.agent.name, "turn": self.turn}


@dataclass
class TextDelta(DeltaEvent):
    type: ClassVar[str] = "text_delta"
    delta: str


@dataclass
class ReasoningDelta(DeltaEvent):
    type: ClassVar[str] = "reasoning_delta"
    delta: str


@dataclass
class OutputDiscarded(DeltaEvent):
    """The text streamed so far in this turn is void: the model call failed after it began
    and is being tried again (sent as the next attempt starts, after ``ModelRetrying``'s
    backoff). A consumer showing deltas live clears what it showed for this turn; the stored
    transcript never held it."""

    type: ClassVar[str] = "output_discarded"


@dataclass
class MessageCompleted(MessageEvent):
    """One model turn, whole: its new entries (reasoning, text, tool calls)."""

    type: ClassVar[str] = "message_completed"
    entries: list[TranscriptEntry]


@dataclass
class UserMessageInjected(MessageEvent):
    """A message pushed into the run's ``Mailbox`` joined the run at the start of ``turn``."""

    type: ClassVar[str] = "user_message_injected"
    content: Any
    turn: int
    token: int | None = field(default=None, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        content = self.content
        if not isinstance(content, str):
            content = _jsonable(content)
        return {"type": self.type, "content": content, "turn": self.turn, "token": self.token}


@dataclass
class ToolCallStarted(ToolEvent):
    """A tool call is about to run. Calls rejected before they run (unknown tool, bad
    arguments, not approved) get only a ``ToolCallCompleted`` with ``is_error=True``."""

    type: ClassVar[str] = "tool_call_started"
    call: ToolCall


@dataclass
class ToolCallCompleted(ToolEvent):
    """A tool call ended: ``result`` is the tool's return value (the error text on failure),
    ``output`` the text the model sees."""

    type: ClassVar[str] = "tool_call_completed"
    call: ToolCall
    result: Any
    is_error: bool = False
    output: str = ""
    images: tuple[dict[str, Any], ...] = ()
    """One ``{index, mime_type}`` stub per image the tool returned (the bytes stay in the
    transcript's ``ToolResultEntry.parts``)."""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "type": self.type,
            "call": _call_dict(self.call),
            "output": self.output,
            "is_error": self.is_error,
        }
        if self.images:
            out["images"] = [dict(stub) for stub in self.images]
        return out


@dataclass
class HandoffOccurred(TransitionEvent):
    type: ClassVar[str] = "handoff"
    from_agent: Agent
    to_agent: Agent

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "from_agent": _name(self.from_agent),
            "to_agent": _name(self.to_agent),
        }


@dataclass
class ApprovalRequired(ToolEvent):
    """A tool that needs approval is about to run.

    Decide while the stream is suspended at this event: ``approve()``, ``reject(reason)``
    or ``defer()`` (park the run durably until ``lovia.approvals.decide``), or later by call
    id through ``RunHandle.approvals``. Without a decision, ``Agent.approval_handler``
    decides; without one, the call is denied.
    """

    type: ClassVar[str] = "approval_required"
    call: ToolCall
    _channel: ApprovalChannel | None = field(default=None, repr=False, compare=False)
    agent_name: str | None = field(default=None, kw_only=True)
    run_id: str | None = field(default=None, kw_only=True)

    def _need_channel(self) -> ApprovalChannel:
        if self._channel is None:
            raise RuntimeError(
                "this ApprovalRequired event has no channel: it was not emitted by a run"
            )
        return self._channel

    def approve(self) -> None:
        """Let the call run."""
        self._need_channel().approve(self.call.id)

    def reject(self, reason: str | None = None) -> None:
        """Refuse the call; the model sees "Tool NAME was not approved." and the reason."""
        self._need_channel().reject(self.call.id, reason=reason)

    def defer(self) -> None:
        """Park the run until someone decides (``lovia.approvals.decide``), across restarts."""
        self._need_channel().defer(self.call.id)

    @property
    def digest(self) -> str:
        """The call's digest (its tool and canonical arguments): what a durable decision
        names (``lovia.approvals.decide(..., digests=...)``) to bind to this call."""
        from .approvals import argument_digest

        return argument_digest(self.call.name, self.call.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "call": _call_dict(self.call),
            "agent": self.agent_name,
            "run_id": self.run_id,
        }


@dataclass
class ToolCallFailed(ErrorEvent):
    """A tool call raised (or its approval check did); the run goes on and the model sees
    the error text in the paired ``ToolCallCompleted``."""

    type: ClassVar[str] = "tool_call_failed"
    error: BaseException
    call: ToolCall | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "error": _error_dict(self.error),
            "call": _call_dict(self.call) if self.call is not None else None,
        }


@dataclass
class ModelRetrying(ErrorEvent):
    """A model call failed with a transient error; attempt ``attempt + 1`` follows in
    ``delay`` seconds."""

    type: ClassVar[str] = "model_retrying"
    error: BaseException
    attempt: int
    max_attempts: int
    delay: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "error": _error_dict(self.error),
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "delay": self.delay,
        }


@dataclass
class CompactionNotice:
    """What a compaction did, for people reading the conversation."""

    reason: str
    reactive: bool
    summary: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "reactive": self.reactive,
            "summary": self.summary,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "detail": list(self.detail),
        }


@dataclass
class ContextCompacted(ContextEvent):
    """The model's view was compacted before a model call (the stored transcript is not).

    ``entries_before`` is the transcript the policy was given, ``entries_after`` the view the
    model sees; ``notice`` says what was done. ``reason``, ``tokens_before``,
    ``tokens_after`` and ``text`` read the notice.
    """

    type: ClassVar[str] = "context_compacted"
    session_id: str | None = None
    entries_before: list[TranscriptEntry] = field(default_factory=list)
    entries_after: list[TranscriptEntry] = field(default_factory=list)
    notice: CompactionNotice | None = None

    @property
    def reason(self) -> str:
        return self.notice.reason if self.notice is not None else ""

    @property
    def tokens_before(self) -> int:
        return (self.notice.tokens_before or 0) if self.notice is not None else 0

    @property
    def tokens_after(self) -> int:
        return (self.notice.tokens_after or 0) if self.notice is not None else 0

    @property
    def text(self) -> str:
        """The notice as one readable line ('' without a notice)."""
        return " ".join(self.notice.detail) if self.notice is not None else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "reason": self.reason,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "text": self.text,
            "notice": None if self.notice is None else self.notice.to_dict(),
            "entries_before": len(self.entries_before),
            "entries_after": len(self.entries_after),
            "session_id": self.session_id,
        }


@dataclass
class RunCompleted(RunEvent):
    type: ClassVar[str] = "run_completed"
    terminal: ClassVar[bool] = True
    result: RunResult

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "result": self.result.to_dict()}


@dataclass
class RunFailed(RunEvent):
    type: ClassVar[str] = "run_failed"
    terminal: ClassVar[bool] = True
    error: BaseException
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "error": _error_dict(self.error), **self.extra}
