"""The ``Checkpointer`` protocol and its value types ``RunHead`` and ``RunSnapshot``.

A checkpoint holds one run under a global ``run_id``: the run's own entries (appended after
every model turn and every tool result, never rewritten) and a small ``RunHead`` replaced at
each save. ``RunSnapshot`` is both together, as ``load`` returns them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import UserError, UserTypeError
from ..transcript import TranscriptEntry, entry_from_dict, entry_to_dict
from ..usage import Usage
from ._checks import MAX_ID_CHARS, RUN_STATUSES, validate_id

__all__ = [
    "MAX_ID_CHARS",
    "RUN_STATUSES",
    "Checkpointer",
    "IfRunExists",
    "OnBusy",
    "PendingApproval",
    "RunHead",
    "RunInfo",
    "RunSnapshot",
    "RunStatus",
    "validate_id",
]

RunStatus = Literal["running", "interrupted", "completed", "failed"]
IfRunExists = Literal["resume", "restart", "fail", "resume_only"]
OnBusy = Literal["wait", "fail"]


@dataclass(frozen=True)
class PendingApproval:
    """A tool call waiting for a person's decision, kept in the run's head.

    ``arguments`` is the raw JSON text the model sent; ``digest`` identifies exactly those
    arguments, so an approval given for one call cannot be replayed for changed ones.
    """

    call_id: str
    tool_name: str
    arguments: str
    digest: str
    agent_name: str | None = None
    requested_at: float = field(default_factory=time.time)
    decision: str | None = None  # "allow" / "deny" once decided, until the run resumes
    reason: str | None = None
    run_id: str | None = None  # filled in by lovia.approvals.pending (not stored)

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "digest": self.digest,
            "agent_name": self.agent_name,
            "requested_at": self.requested_at,
            "decision": self.decision,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingApproval:
        if not isinstance(data, dict):
            raise ValueError(f"a pending approval must be an object, got {data!r}")
        agent = data.get("agent_name")
        return cls(
            call_id=str(data["call_id"]),
            tool_name=str(data["tool_name"]),
            arguments=str(data.get("arguments", "{}")),
            digest=str(data.get("digest", "")),
            agent_name=None if agent is None else str(agent),
            requested_at=float(data.get("requested_at", 0.0)),
            decision=_opt_str(data.get("decision")),
            reason=_opt_str(data.get("reason")),
        )


def _timeline_of(value: Any) -> dict[str, Any]:
    """A stored timeline, or ``{}`` for anything that is not one (it only informs a view)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k in ("turns", "calls") and isinstance(v, list)}


def _trace_of(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): str(v) for k, v in value.items()}


def _steps_of(value: Any) -> dict[str, Any]:
    """Stored steps: ``{key: {slot: result}}``; anything else reads as none."""
    if not isinstance(value, dict):
        return {}
    return {str(k): dict(v) for k, v in value.items() if isinstance(v, dict)}


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class RunHead:
    """The small mutable part of a checkpoint, replaced at every save.

    The positional fields are lovia 0.9.119's, in its order; the fields after them are
    keyword-only.
    """

    agent_name: str
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    status: RunStatus = "running"
    output: Any = None
    error: dict[str, Any] | None = None
    last_input_tokens: int | None = None
    """The provider's input-token count of the latest turn (calibrates estimates on resume)."""
    context_state: dict[str, Any] = field(default_factory=dict)
    updated_at: float = field(default_factory=time.time)
    pending_handoff: str | None = None
    """The agent a handoff that fired in the latest turn moves to (not applied yet)."""
    started_at: float | None = None
    """When the run first started (Unix seconds); ``None`` when not recorded."""
    _: KW_ONLY
    session_id: str | None = None
    started_calls: tuple[str, ...] = ()
    """``call_id``s of tool calls that started and have no stored result yet (in doubt)."""
    session_version: int | None = None
    """The session's version when the run loaded its history (``None``: not known), so its
    append, also on replay, lands only if no other run changed the session since."""
    turn_agent: str | None = None
    """The agent whose model turn asked for the latest calls (it differs from ``agent_name``
    after a handoff in that turn): a resume runs the turn's unfinished calls with its tools."""
    pending_approvals: tuple[PendingApproval, ...] = ()
    """Tool calls waiting for approval, in the order they were asked for."""
    budget: dict[str, Any] = field(default_factory=dict)
    """What the run has spent against its limits (JSON values)."""
    trace: dict[str, str] | None = None
    """The tracer's link to this run's span, so a resumed run's trace points at it."""
    timeline: dict[str, Any] = field(default_factory=dict)
    """When each model turn and tool call ran, for ``lovia runs show`` (JSON values:
    ``turns``: ``[turn, agent, start, end, input_tokens, output_tokens]`` rows; ``calls``:
    ``[call_id, tool, start, end, is_error]`` rows, ``end`` ``None`` while it runs; Unix
    seconds; the latest ones only). Empty for runs of older versions."""
    steps: dict[str, Any] = field(default_factory=dict)
    """The recorded steps (``ctx.step``) of tool calls that have no result yet, by the call's
    idempotency key: ``{key: {"<step name>#<n>": result}}`` (JSON values)."""
    queued: tuple[dict[str, Any], ...] = ()
    """Messages put in the run's mailbox (``Mailbox.put``) that no turn has read yet, oldest
    first, each an input entry's dict: a resume reads them at its next turn."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent_name": self.agent_name,
            "usage": self.usage.to_dict(),
            "turns": self.turns,
            "status": self.status,
            "output": self.output,
            "error": self.error,
            "last_input_tokens": self.last_input_tokens,
            "context_state": self.context_state,
            "pending_handoff": self.pending_handoff,
            "updated_at": self.updated_at,
            "started_at": self.started_at,
        }
        # This project's fields follow lovia 0.9.119's only when set, so a head of a plain
        # run serialises exactly as 0.9.119's does; ``from_dict`` defaults what is missing.
        extra = {
            "session_id": self.session_id,
            "started_calls": list(self.started_calls),
            "session_version": self.session_version,
            "turn_agent": self.turn_agent,
            "pending_approvals": [p.to_dict() for p in self.pending_approvals],
            "budget": self.budget,
            "trace": self.trace,
            "timeline": self.timeline,
            "steps": self.steps,
            "queued": [dict(q) for q in self.queued],
        }
        out.update({key: value for key, value in extra.items() if value not in (None, [], {})})
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunHead:
        """Rebuild a head from ``to_dict`` output; also reads lovia 0.9.119's head dicts."""
        if not isinstance(data, dict):  # a TypeError, as 0.9.119 raised (not AttributeError)
            raise UserTypeError(
                f"a run head is a JSON object, got {type(data).__name__}",
                hint="pass what RunHead.to_dict() wrote",
            )
        status = data.get("status", "running")
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        started = data.get("started_at")
        return cls(
            agent_name=str(data["agent_name"]),
            usage=Usage.from_dict(data.get("usage")),
            turns=int(data.get("turns") or 0),
            status=status,
            output=data.get("output"),
            error=data.get("error"),
            last_input_tokens=_optional_int(data.get("last_input_tokens"), "last_input_tokens"),
            context_state=dict(data.get("context_state") or {}),
            # a head without a time is stamped with the time it is read, as 0.9.119 does
            updated_at=float(data["updated_at"])
            if data.get("updated_at") is not None
            else time.time(),
            pending_handoff=_optional_str(data.get("pending_handoff")),
            started_at=None if started is None else float(started),
            session_id=_optional_str(data.get("session_id")),
            started_calls=tuple(data.get("started_calls") or ()),
            session_version=_optional_int(data.get("session_version"), "session_version"),
            turn_agent=_optional_str(data.get("turn_agent")),
            pending_approvals=tuple(
                PendingApproval.from_dict(p) for p in data.get("pending_approvals") or ()
            ),
            budget=dict(data.get("budget") or {}),
            trace=_trace_of(data.get("trace")),
            timeline=_timeline_of(data.get("timeline")),
            steps=_steps_of(data.get("steps")),
            queued=tuple(dict(q) for q in data.get("queued") or () if isinstance(q, dict)),
        )

    def to_json(self) -> str:
        """``to_dict()`` as JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, payload: str | bytes) -> RunHead:
        return cls.from_dict(json.loads(payload))


@dataclass(frozen=True)
class RunSnapshot:
    """A stored run: its own entries (no session history, no system prompt) plus its head.

    The positional fields are lovia 0.9.119's, in its order; the fields after them are
    keyword-only.
    """

    run_id: str
    agent_name: str
    entries: list[TranscriptEntry]
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    status: RunStatus = "running"
    output: Any = None
    error: dict[str, Any] | None = None
    last_input_tokens: int | None = None
    context_state: dict[str, Any] = field(default_factory=dict)
    updated_at: float = field(default_factory=time.time)
    pending_handoff: str | None = None
    started_at: float | None = None
    _: KW_ONLY
    session_id: str | None = None
    started_calls: tuple[str, ...] = ()
    session_version: int | None = None
    turn_agent: str | None = None
    pending_approvals: tuple[PendingApproval, ...] = ()
    budget: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, str] | None = None
    timeline: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)
    queued: tuple[dict[str, Any], ...] = ()

    @property
    def head(self) -> RunHead:
        return RunHead(
            **{f.name: getattr(self, f.name) for f in fields(RunHead)},
        )

    @classmethod
    def of(cls, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> RunSnapshot:
        values = {f.name: getattr(head, f.name) for f in fields(RunHead)}
        return cls(run_id=run_id, entries=list(entries), **values)

    @classmethod
    def from_parts(
        cls, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead
    ) -> RunSnapshot:
        """A snapshot from its stored entries and head (the same as ``of``)."""
        return cls.of(run_id, entries, head)

    def with_head(self, head: RunHead) -> RunSnapshot:
        return replace(self, **{f.name: getattr(head, f.name) for f in fields(RunHead)})

    def to_dict(self) -> dict[str, Any]:
        """The run id, its entries as dicts, and the head's fields, as JSON-safe data."""
        return {
            "run_id": self.run_id,
            "entries": [entry_to_dict(e) for e in self.entries],
            **self.head.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSnapshot:
        """Rebuild a snapshot from ``to_dict`` output (also lovia 0.9.119's)."""
        if not isinstance(data, dict):  # a TypeError, as 0.9.119 raised (not AttributeError)
            raise UserTypeError(
                f"a run snapshot is a JSON object, got {type(data).__name__}",
                hint="pass what RunSnapshot.to_dict() (or 'lovia runs export') wrote",
            )
        entries = [entry_from_dict(e) for e in data.get("entries") or ()]
        return cls.of(str(data["run_id"]), entries, RunHead.from_dict(data))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, payload: str | bytes) -> RunSnapshot:
        return cls.from_dict(json.loads(payload))


@dataclass(frozen=True)
class RunInfo:
    """A stored run without its entries, as ``list_run_heads`` lists it: its id, its head
    and how many entries it holds (read without reading them)."""

    run_id: str
    head: RunHead
    entry_count: int = 0

    @property
    def status(self) -> RunStatus:
        return self.head.status

    @property
    def session_id(self) -> str | None:
        return self.head.session_id

    @property
    def agent_name(self) -> str:
        return self.head.agent_name

    @property
    def updated_at(self) -> float:
        return self.head.updated_at

    @property
    def started_at(self) -> float | None:
        return self.head.started_at

    @property
    def error(self) -> dict[str, Any] | None:
        return self.head.error

    @property
    def pending_approvals(self) -> tuple[PendingApproval, ...]:
        return self.head.pending_approvals


_CONFORMING: set[tuple[type, type]] = set()


def conforms(obj: Any, protocol: type) -> bool:
    """``isinstance(obj, protocol)`` for a runtime-checkable protocol, remembered per class
    when the class itself has every member (Python 3.11 walks the protocol's members on
    every check: tens of microseconds, paid by every run that passes a store)."""
    cls = type(obj)
    if (cls, protocol) in _CONFORMING:
        return True
    if not isinstance(obj, protocol):
        return False
    members = getattr(protocol, "__protocol_attrs__", None)
    if members is None:
        import typing

        members = getattr(typing, "_get_protocol_attrs", lambda _p: None)(protocol)
    if members is not None and all(hasattr(cls, name) for name in members):
        _CONFORMING.add((cls, protocol))
    return True


@runtime_checkable
class Checkpointer(Protocol):
    """A run store keyed by a global ``run_id``.

    Invariants every implementation keeps:

    - ``append(run_id, entries, head)`` adds ``entries`` after the ones already stored and
      replaces the head, atomically: a reader sees the save whole or not at all.
    - ``load`` returns every entry appended so far, in order, with the latest head, or
      ``None`` for an unknown id; ``delete`` forgets the run (a later append starts afresh).
    - What goes in and what comes out is copied.
    """

    async def append(
        self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead
    ) -> None: ...

    async def load(self, run_id: str) -> RunSnapshot | None: ...

    async def delete(self, run_id: str) -> None: ...


def check_updated(head: Any) -> RunHead | None:
    """What an ``update_head`` function returned: a ``RunHead``, or ``None`` (no change)."""
    if head is not None and not isinstance(head, RunHead):
        raise UserError(
            f"update_head's function must return a RunHead or None, got {type(head).__name__}",
            hint="return dataclasses.replace(head, ...) to change the head, None to keep it",
        )
    return head


def _optional_int(value: Any, name: str) -> int | None:
    """A stored optional whole number (heads written before the field existed have none)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    return value


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
