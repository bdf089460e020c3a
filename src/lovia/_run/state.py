"""``RunState``: everything that changes while one run goes on (owned by its driver)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from ..transcript import TranscriptEntry
from ..usage import Usage

if TYPE_CHECKING:
    from ..agent import Agent
    from ..stores.checkpoint import PendingApproval

__all__ = ["RunState", "new_run_id"]


_RANDOM: list[bytes] = []  # 16-byte pieces of one os.urandom read, taken from the end


def new_run_id() -> str:
    """``uuid.uuid4().hex`` (random, version 4, RFC 4122 variant) without the UUID object,
    from OS randomness read 4 KiB at a time (``list.pop`` hands each piece out once)."""
    try:
        piece = _RANDOM.pop()
    except IndexError:
        raw = os.urandom(4096)
        _RANDOM.extend(raw[i : i + 16] for i in range(16, 4096, 16))
        piece = raw[:16]
    b = bytearray(piece)
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    return b.hex()


if hasattr(os, "register_at_fork"):  # a child must not hand out its parent's ids again
    os.register_at_fork(after_in_child=_RANDOM.clear)


TIMELINE_ROWS = 200  # turns and calls kept in a head's timeline (the latest)


class RunState:
    """The mutable state of one run. Nothing outside the run loop changes it."""

    __slots__ = (
        "agent",
        "budget_state",
        "context_notice",
        "context_state",
        "entries",
        "finish_reason",
        "history",
        "history_version",
        "pending_approvals",
        "pending_handoff",
        "reported_input_tokens",
        "session_version",
        "started_at",
        "started_calls",
        "steps",
        "system_entries",
        "timeline",
        "turn",
        "turn_agent",
        "usage",
    )

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.usage = Usage()
        self.turn = 0
        self.system_entries: list[TranscriptEntry] = []
        self.history: list[TranscriptEntry] = []
        self.entries: list[TranscriptEntry] = []
        self.context_state: dict[str, Any] = {}
        self.context_notice: dict[str, Any] | None = None  # the last compaction's, this run
        self.finish_reason: str | None = None
        self.reported_input_tokens: int | None = None
        self.started_calls: list[str] = []
        # the recorded steps (ctx.step) of calls without a result: {call key: {slot: result}}
        self.steps: dict[str, dict[str, Any]] = {}
        self.session_version: int | None = None  # the history's, when the session keeps one
        # the version ``history`` was read at: not session_version for a run whose append
        # was refused, which keeps the version its answer saw
        self.history_version: int | None = None
        self.turn_agent: Agent | None = None  # who asked for this turn's calls
        # the target of a handoff that fired this turn; the switch happens after the turn's
        # calls, and a run that stops before it keeps it in its head (resumed from there)
        self.pending_handoff: Agent | None = None
        # when each turn and tool call ran (RunHead.timeline): rows, latest TIMELINE_ROWS
        self.timeline: dict[str, list[list[Any]]] = {"turns": [], "calls": []}
        self.pending_approvals: list[PendingApproval] = []  # parked calls (durable approvals)
        self.budget_state: dict[str, Any] = {}
        # the run's first start; a resume keeps its head's, unknown (None) for a head without one
        self.started_at: float | None = time.time()

    def time_turn(self, started: float, ended: float, usage: Usage) -> None:
        rows = self.timeline["turns"]
        rows.append(
            [self.turn, self.agent.name, started, ended, usage.input_tokens, usage.output_tokens]
        )
        del rows[:-TIMELINE_ROWS]

    def time_call_start(self, call_id: str, tool: str, started: float) -> None:
        rows = self.timeline["calls"]
        rows.append([call_id, tool, started, None, None])
        del rows[:-TIMELINE_ROWS]

    def time_call_end(self, call_id: str, ended: float, is_error: bool) -> None:
        for row in reversed(self.timeline["calls"]):
            if row[0] == call_id and row[3] is None:
                row[3], row[4] = ended, is_error
                return
