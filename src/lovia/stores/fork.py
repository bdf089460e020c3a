"""Forking a stored run at a step: the forked snapshot, computed once for every backend.

A run's entries hold its model turns in order: each turn is a block of model output
(reasoning, text, tool calls) followed by what answered it (tool results, inputs given
before the next turn). Forking "after turn N" keeps everything before the model output of
turn N+1; "before a call" also cuts turn N's results at that call's result, so the resumed
fork runs that call (and the turn's later ones) before it asks the model again.

``fork_snapshot`` computes the new snapshot from a loaded one; ``fork_run`` writes it under
a new run id with one ``append``, which every checkpointer stores atomically, so a crash
mid-fork leaves no fork or a whole one, and the source, read with one ``load``, is a saved
step of a run another worker may be driving, never half of one.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import UserError
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from ..usage import Usage
from .checkpoint import Checkpointer, RunSnapshot, validate_id
from .lease import LeaseStore

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ForkEdits",
    "ForkPoint",
    "ForkTargetTaken",
    "Forking",
    "fork_run",
    "fork_run_in_session",
    "fork_snapshot",
    "model_turn_starts",
]

# how long a fork may hold the lease on its new run id while it writes the fork
_FORK_LEASE_TTL = 60.0


class ForkTargetTaken(UserError):
    """The fork's new id holds a session or a run already, or another fork is writing it:
    nothing was written."""


_MODEL = (AssistantTextEntry, ReasoningEntry, ToolCallEntry)


class ForkEdits(TypedDict, total=False):
    """What a fork changes besides where it is cut (``at_turn``): the keywords of
    ``fork_snapshot``, ``fork_run`` and ``Checkpointer.fork``, declared once here.

    ``before_call`` cuts turn ``at_turn``'s results at that call's. Edits at the fork
    point: ``user_input`` replaces the last user input kept, ``tool_results`` replaces the
    output of kept results of turn ``at_turn`` by call id, ``drop_calls`` removes calls of
    that turn (and their results). ``session_id`` binds the fork to a session (``None``:
    the source's)."""

    before_call: str | None
    user_input: str | None
    tool_results: Mapping[str, str] | None
    drop_calls: Sequence[str]
    session_id: str | None


@dataclass(frozen=True)
class ForkPoint:
    """Where a fork was cut: after model turn ``at_turn``, before ``before_call`` if set."""

    run_id: str
    at_turn: int
    before_call: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"run_id": self.run_id, "at_turn": self.at_turn}
        if self.before_call is not None:
            out["before_call"] = self.before_call
        return out


def model_turn_starts(entries: Sequence[TranscriptEntry]) -> list[int]:
    """The index of the first entry of each model turn's output, in order."""
    starts: list[int] = []
    previous_was_model = False
    for i, entry in enumerate(entries):
        is_model = isinstance(entry, _MODEL)
        if is_model and not previous_was_model:
            starts.append(i)
        previous_was_model = is_model
    return starts


def fork_snapshot(
    source: RunSnapshot, new_run_id: str, *, at_turn: int, **edits: Unpack[ForkEdits]
) -> RunSnapshot:
    """The snapshot of ``source`` forked after model turn ``at_turn`` (0: before the first),
    ready to resume under ``new_run_id``: status ``"interrupted"``, turn count ``at_turn``,
    with the ``edits`` at the fork point (``ForkEdits``). Usage counts the kept turns as the
    run's timeline recorded them; the budget, context state and trace link start afresh.
    """
    unknown = sorted(set(edits) - set(ForkEdits.__annotations__))
    if unknown:
        raise UserError(
            f"a fork takes no option {unknown[0]!r}",
            hint=f"pass at_turn= and any of {', '.join(ForkEdits.__annotations__)}",
        )
    before_call, session_id = edits.get("before_call"), edits.get("session_id")
    validate_id(new_run_id, "new_run_id")
    if new_run_id == source.run_id:
        raise UserError("a fork needs a run id of its own", hint="pass another new_run_id")
    entries = list(source.entries)
    starts = model_turn_starts(entries)
    _check_turn(source, at_turn, len(starts), before_call)
    cut = starts[at_turn] if at_turn < len(starts) else len(entries)
    turn_start = starts[at_turn - 1] if at_turn > 0 else 0
    if before_call is not None:
        cut = _call_result_index(source.run_id, entries, turn_start, cut, at_turn, before_call)
    kept = entries[:cut]
    kept = _edit(source.run_id, kept, len(kept), edits.get("user_input"))
    results, drop = edits.get("tool_results") or {}, edits.get("drop_calls", ())
    kept = _edit_turn(source.run_id, kept, turn_start, at_turn, results, drop)
    answered = {e.call_id for e in kept if isinstance(e, ToolResultEntry)}
    asked = {e.call_id for e in kept if isinstance(e, ToolCallEntry)}
    rows = [r for r in source.timeline.get("turns", ()) if _turn_of(r) <= at_turn]
    calls = [r for r in source.timeline.get("calls", ()) if r and r[0] in answered]
    agent, turn_agent, handoff = _agents(source, at_turn)
    now = time.time()
    return RunSnapshot(
        run_id=new_run_id,
        agent_name=agent,
        entries=kept,
        usage=_usage(rows),
        turns=at_turn,
        status="interrupted",
        last_input_tokens=_int_at(rows[-1], 4) if rows else None,
        updated_at=now,
        pending_handoff=handoff,
        started_at=now,
        session_id=source.session_id if session_id is None else session_id,
        turn_agent=turn_agent,
        pending_approvals=tuple(
            p for p in source.pending_approvals if p.call_id in asked - answered
        ),
        timeline={"turns": [list(r) for r in rows], "calls": [list(r) for r in calls]},
    )


async def fork_run(
    checkpointer: Checkpointer,
    run_id: str,
    new_run_id: str,
    *,
    at_turn: int,
    **edits: Unpack[ForkEdits],
) -> RunSnapshot:
    """Fork stored run ``run_id`` into ``new_run_id`` (see ``fork_snapshot``) and return
    the fork as stored. The source is only read; ``UserError`` when it is unknown, when
    ``new_run_id`` is taken, or when the fork point is not in the run."""
    validate_id(run_id, "run_id")
    validate_id(new_run_id, "new_run_id")
    source = await checkpointer.load(run_id)
    if source is None:
        raise UserError(f"no run {run_id!r} to fork", hint="lovia runs list shows the run ids")
    forked = fork_snapshot(source, new_run_id, at_turn=at_turn, **edits)
    # the lease on the new id makes "absent, then written" one step: a second fork into the
    # same id (in this process or another sharing the store) waits for nothing and is refused
    owner = f"fork-{uuid.uuid4().hex}"
    leases = checkpointer if isinstance(checkpointer, LeaseStore) else None
    if leases is not None and not await leases.acquire_lease(new_run_id, owner, _FORK_LEASE_TTL):
        raise ForkTargetTaken(
            f"run {new_run_id!r} is being written by another fork or worker",
            hint="pass a new run id for the fork",
        )
    try:
        if await checkpointer.load(new_run_id) is not None:
            raise ForkTargetTaken(
                f"run {new_run_id!r} exists already; a fork never overwrites a run",
                hint="pass a new run id for the fork",
            )
        await checkpointer.append(new_run_id, forked.entries, forked.head)  # one atomic save
    finally:
        if leases is not None:
            await leases.release_lease(new_run_id, owner)
    return forked


class Forking:
    """``fork`` for the built-in checkpointers (each stores an ``append`` atomically)."""

    async def fork(
        self, run_id: str, new_run_id: str, *, at_turn: int, **edits: Unpack[ForkEdits]
    ) -> RunSnapshot:
        """Fork run ``run_id`` after model turn ``at_turn`` into ``new_run_id``, ready to
        resume there: the resumed fork asks the model from turn ``at_turn + 1`` on and
        re-runs nothing before. ``before_call`` forks before that call of turn ``at_turn``
        (the resume runs it); ``user_input``, ``tool_results`` (call id to output) and
        ``drop_calls`` edit the fork point (``ForkEdits``). The source run is untouched.
        Atomic: a crash leaves no fork or a whole one."""
        checkpointer: Any = self
        return await fork_run(checkpointer, run_id, new_run_id, at_turn=at_turn, **edits)


def _check_turn(source: RunSnapshot, at_turn: Any, turns: int, before_call: str | None) -> None:
    if isinstance(at_turn, bool) or not isinstance(at_turn, int) or at_turn < 0:
        raise UserError(
            f"at_turn must be a whole number of model turns, 0 or more; got {at_turn!r}",
            hint="pass at_turn=1 to fork after the run's first model turn",
        )
    limit = turns if before_call is not None else turns - 1
    if source.status != "completed" and before_call is None:
        limit = turns
    if at_turn > max(limit, 0) or (before_call is not None and at_turn == 0):
        raise UserError(
            f"run {source.run_id!r} has {turns} model turn(s) stored; it cannot be forked "
            f"after turn {at_turn}" + (f" before call {before_call!r}" if before_call else ""),
            hint=f"pass at_turn between 0 and {max(limit, 0)} (lovia runs show lists the turns)",
        )


def _call_result_index(
    run_id: str, entries: list[TranscriptEntry], start: int, end: int, turn: int, call: str
) -> int:
    """Where turn ``turn``'s result for ``call`` is (or the turn's end when the call has
    none yet); ``UserError`` when the turn asked for no such call."""
    asked = any(isinstance(e, ToolCallEntry) and e.call_id == call for e in entries[start:end])
    if not asked:
        raise UserError(
            f"turn {turn} of run {run_id!r} asked for no call {call!r}",
            hint="lovia runs show lists each turn's call ids",
        )
    for i in range(start, end):
        entry = entries[i]
        if isinstance(entry, ToolResultEntry) and entry.call_id == call:
            return i
    return end


def _edit(
    run_id: str, kept: list[TranscriptEntry], before: int, user_input: str | None
) -> list[TranscriptEntry]:
    """``kept`` with its last user input before index ``before`` replaced by ``user_input``."""
    if user_input is None:
        return kept
    for i in range(min(before, len(kept)) - 1, -1, -1):
        entry = kept[i]
        if isinstance(entry, InputEntry) and entry.role == "user":
            kept[i] = InputEntry(role="user", content=user_input)
            return kept
    raise UserError(
        f"run {run_id!r} has no user input before the fork point to replace",
        hint="fork without user_input, or at a later turn",
    )


def _edit_turn(
    run_id: str,
    kept: list[TranscriptEntry],
    start: int,
    turn: int,
    results: Mapping[str, str],
    drop: Sequence[str],
) -> list[TranscriptEntry]:
    """Turn ``turn``'s results replaced and calls dropped (from index ``start`` on)."""
    if isinstance(drop, str):
        raise UserError("drop_calls must be a list of call ids", hint=f"pass [{drop!r}]")
    if not results and not drop:
        return kept
    if turn == 0:
        raise UserError(
            "a fork before the first model turn has no tool call to edit",
            hint="fork at_turn=1 or later to edit that turn's calls",
        )
    head, tail = kept[:start], kept[start:]
    found = {e.call_id for e in tail if isinstance(e, (ToolCallEntry, ToolResultEntry))}
    answered = {e.call_id for e in tail if isinstance(e, ToolResultEntry)}
    for call in [*results, *drop]:
        if call not in found:
            raise UserError(
                f"turn {turn} of run {run_id!r} kept no call {call!r} to edit",
                hint="lovia runs show lists each turn's call ids",
            )
    for call in results:
        if call not in answered:
            raise UserError(
                f"call {call!r} has no result before the fork point to replace",
                hint="fork after the call's result, or drop the call instead",
            )
    out: list[TranscriptEntry] = []
    for entry in tail:
        if isinstance(entry, (ToolCallEntry, ToolResultEntry)) and entry.call_id in drop:
            continue
        if isinstance(entry, ToolResultEntry) and entry.call_id in results:
            entry = ToolResultEntry(call_id=entry.call_id, output=str(results[entry.call_id]))
        out.append(entry)
    return head + out


def _agents(source: RunSnapshot, turn: int) -> tuple[str, str | None, str | None]:
    """The agent asked next, the agent whose turn asked for the kept calls, and a handoff
    still to apply, at the fork point (from the timeline; the head's at the run's end)."""
    if turn >= source.turns:
        return source.agent_name, source.turn_agent, source.pending_handoff
    by_turn = {_turn_of(r): r for r in source.timeline.get("turns", ())}
    following, current = by_turn.get(turn + 1), by_turn.get(turn)
    if following is None:
        raise UserError(
            f"run {source.run_id!r} has no timeline row for turn {turn + 1}, so the agent "
            "to ask after the fork point is not known",
            hint="fork a run stored by this version, or at its last turn",
        )
    turn_agent = str(current[1]) if current is not None and len(current) > 1 else None
    return str(following[1]), turn_agent, None


def _turn_of(row: Any) -> int:
    value = row[0] if isinstance(row, (list, tuple)) and row else None
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _int_at(row: Any, index: int) -> int | None:
    value = row[index] if isinstance(row, (list, tuple)) and len(row) > index else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(rows: Sequence[Any]) -> Usage:
    return Usage(
        input_tokens=sum(_int_at(r, 4) or 0 for r in rows),
        output_tokens=sum(_int_at(r, 5) or 0 for r in rows),
    )


async def fork_run_in_session(
    session: Any,
    checkpointer: Checkpointer,
    run_id: str,
    new_run_id: str,
    *,
    new_session_id: str | None = None,
    **options: Any,
) -> tuple[RunSnapshot, str | None]:
    """Fork run ``run_id`` at a step (``options`` as ``fork_snapshot``'s) together with its
    conversation: a run of a session goes on in a fork of that session holding its history
    up to just before the run (so the resumed fork sees what the run saw, not the run's own
    answer), under ``new_session_id`` (default: ``new_run_id``). A run of no session stays
    of none unless ``new_session_id`` names one. Returns the fork and its session id.

    Nothing is half-written: a bad fork point fails before any write, a taken run id or
    session id raises ``ForkTargetTaken``, and a history copied for a run fork that then
    fails is removed again."""
    validate_id(run_id, "run_id")
    validate_id(new_run_id, "new_run_id")
    source = await checkpointer.load(run_id)
    if source is None:
        raise UserError(f"no run {run_id!r} to fork", hint="lovia runs list shows the run ids")
    fork_snapshot(source, new_run_id, **options)  # a bad fork point fails before a write
    if await checkpointer.load(new_run_id) is not None:
        raise ForkTargetTaken(
            f"run {new_run_id!r} exists already; a fork never overwrites a run",
            hint="pass a new run id for the fork",
        )
    target = new_session_id
    copied = False
    if source.session_id is not None:
        target = new_session_id or new_run_id
        copied = await _fork_history(session, source.session_id, run_id, target)
    elif target is not None and await session.load(target):
        raise _session_taken(target)
    try:
        forked = await fork_run(checkpointer, run_id, new_run_id, session_id=target, **options)
    except BaseException:
        if copied and target is not None:
            await session.clear(target)  # the history this call copied, never another's
        raise
    return forked, target


async def _fork_history(session: Any, session_id: str, run_id: str, new_id: str) -> bool:
    """Fork ``session_id`` into ``new_id`` up to just before run ``run_id`` (whole when the
    run has not been appended to it yet); True when something was copied."""
    segments = await session.segments(session_id)
    ids = [s.run_id for s in segments]
    keep = sum(len(s.entries) for s in segments[: ids.index(run_id)]) if run_id in ids else None
    if keep == 0 or not any(s.entries for s in segments):
        if await session.load(new_id):
            raise _session_taken(new_id)
        return False
    await session.fork(session_id, new_id, keep_entries=keep)
    return True


def _session_taken(session_id: str) -> ForkTargetTaken:
    return ForkTargetTaken(
        f"session {session_id!r} exists already; a fork never writes into a session",
        hint="pass a new session id for the fork",
    )
