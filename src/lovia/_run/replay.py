"""Answering a run that already ran: a completed checkpoint replayed (no model, no tools, no
hooks; the session append re-applied idempotently), or a run whose checkpoint was deleted on
success answered from its session segment. Also the one session read a run's setup uses."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from .. import events as ev
from ..errors import LoviaError, UserError
from ..session import TIMING_META_KEY
from ..stores.capabilities import VersionedSession, has_capability
from ..stores.checkpoint import RunSnapshot
from .output import parse_output, revive_output
from .plan import segment_answer
from .result import RunResult
from .resume import replay_agent

if TYPE_CHECKING:
    from .run import Run

_log = logging.getLogger("lovia.replay")

__all__ = [
    "conflicted",
    "read_history",
    "refuse_if_in_session",
    "refuse_if_settled",
    "refused_answer",
    "replay",
    "replay_from_session",
]


async def replay(d: Run, snap: RunSnapshot) -> RunResult:
    """No model, no hooks, no guardrails; only the terminal event; session re-applied.

    The run's usage counts in an agent-as-tool caller's first, whatever happens next. An
    output that no longer fits ``output_type`` raises before anything is written (the
    snapshot stays for a corrected replay); an output the run could not store (a 0.9.119
    head says ``OutputNotSerializable``) raises after the session append and
    ``delete_on_success``, since its entries are all a replay can still deliver."""
    if d.o.parent_usage is not None:
        d.o.parent_usage.add(snap.usage)
    agent = replay_agent(d.entry_agent, snap.agent_name)
    lost = snap.output is None and (snap.error or {}).get("type") == "OutputNotSerializable"
    output = None if lost else revive_output(agent, d.kit.output_type(agent), snap.output)
    await d.recorder.finish_replay(snap)
    if lost:
        raise UserError(
            f"run {snap.run_id!r} completed, but its output was not JSON-safe and was not "
            f"stored ({(snap.error or {}).get('message', 'no detail')}), so it cannot be "
            "replayed; its entries are in the session when the run had one",
            hint="run the task again with if_run_exists='restart', or under a new run_id",
        )
    started, finished = _replayed_timing(d, snap) or (None, None)
    result = RunResult(
        output=output,
        entries=list(snap.entries),
        usage=snap.usage,
        turns=snap.turns,
        finish_reason=None,
        final_agent=agent,
        run_id=snap.run_id,
        session_id=d.o.session_id,
        replayed=True,
        last_input_tokens=getattr(snap, "last_input_tokens", None),
        started_at=started,
        finished_at=finished,
    )
    await d.send(ev.RunCompleted(result))
    return result


async def replay_from_session(d: Run, snapshot: RunSnapshot | None) -> RunResult | None:
    """A run already in the session under this run id (its checkpoint deleted on success,
    or a stopped run its caller kept there) is answered from its segment, not run again.
    A run whose append was refused as a conflict (``snapshot``) finishes as it was kept."""
    o = d.o
    if o.session is None or o.session_id is None or d.checkpoint is None:
        return None
    if conflicted(snapshot):
        return None
    if d.checkpoint.if_run_exists in ("restart", "fail"):
        return None  # refuse_if_in_session ran before anything was written
    # the run's history when it is not in the session: _setup takes it from here (read
    # with the run's lease when the stores could: lovia.stores.pg_first_read)
    if d.history_read is None:
        d.history_read = await read_history(d)
    for seg in d.history_read[0]:
        if seg.run_id != d.run_id:
            continue
        answer = segment_answer(list(seg.entries))
        if answer is None:
            return None  # refuse_if_settled refused it before anything was written
        agent = d.entry_agent
        output, _ = parse_output(agent, d.kit.output_type(agent), answer)
        timing = _timing(d, [seg])
        result = RunResult(
            output=output,
            entries=list(seg.entries),
            usage=d.state.usage,
            turns=0,
            finish_reason=None,
            final_agent=agent,
            run_id=d.run_id,
            session_id=o.session_id,
            replayed=True,
            started_at=timing[0] if timing else None,
            finished_at=timing[1] if timing else None,
        )
        await d.send(ev.RunCompleted(result))
        return result
    return None


def _replayed_timing(d: Run, snap: RunSnapshot) -> tuple[float, float] | None:
    """A replayed checkpoint's timing as its segment records it, known when the session was
    read with the lease (``lovia.stores.pg_first_read``): the segment's, or, when the read
    found none, the one ``finish_replay`` writes with it. None when unknown (no read)."""
    if d.history_read is None:
        return None
    segments = d.history_read[0]
    if any(seg.run_id == d.run_id for seg in segments):
        return _timing(d, segments)
    if snap.started_at is None or not snap.entries:
        return None  # finish_replay records no timing (or no segment)
    return snap.started_at, snap.updated_at


def _timing(d: Run, segments: list[Any]) -> tuple[float, float] | None:
    """The ``(started_at, finished_at)`` the run's segment recorded (its save wrote it),
    carried into a replay's result as a run's own; None when it recorded none."""
    for seg in segments:
        if seg.run_id != d.run_id:
            continue
        timing = (seg.meta or {}).get(TIMING_META_KEY)
        if not isinstance(timing, dict):
            return None
        start, finish = _seconds(timing.get("started_at")), _seconds(timing.get("finished_at"))
        return None if start is None or finish is None else (start, finish)
    return None


def _seconds(value: Any) -> float | None:
    """A recorded time, or None for anything else (a flag, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


async def refuse_if_in_session(d: Run, *, stored: bool) -> None:
    """Under ``"restart"`` or ``"fail"`` with nothing stored (the checkpoint was deleted), a
    run the session already holds is refused before anything runs: a session keeps one
    segment per run id, so a new answer under that id could never land there (it would be
    lost, and the checkpoint would contradict the session). A ``"restart"`` of a stored run
    does what it says, drops it and runs again, with a warning that the session keeps the
    earlier answer. The history read is kept for the run's setup."""
    o = d.o
    if o.session is None or o.session_id is None:
        return
    d.history_read = await read_history(d)
    if not any(seg.run_id == d.run_id for seg in d.history_read[0]):
        return
    assert d.checkpoint is not None
    policy = d.checkpoint.if_run_exists
    if stored:
        _log.warning(
            "run %r restarts, but session %r already holds its earlier answer and keeps it "
            "(one segment per run id); rewind the session before that turn to replace it",
            d.run_id,
            o.session_id,
        )
        return
    raise UserError(
        f"run {d.run_id!r} is already in session {o.session_id!r}"
        + (": restarting it could never land there" if policy == "restart" else ""),
        hint="start the conversation's next turn under a new run_id; to answer that turn "
        "again, rewind the session before it first (session.rewind)",
    )


async def refuse_if_settled(d: Run) -> None:
    """Under ``"resume"`` or ``"resume_only"``, a run the session already holds without an
    answer (stopped, and kept there by its caller as S6 allows) is refused before anything
    runs: one segment per run id, so whatever a new attempt answered could never land there.
    One with an answer is replayed from its segment (``replay_from_session``)."""
    o = d.o
    if o.session is None or o.session_id is None:
        return
    if d.history_read is None:  # else read with the run's lease (lovia.stores.pg_first_read)
        try:
            d.history_read = await read_history(d)
        except LoviaError:
            return  # read again once the run has started, where its failure is recorded
    for seg in d.history_read[0]:
        if seg.run_id == d.run_id and segment_answer(list(seg.entries)) is None:
            raise UserError(
                f"run {d.run_id!r} is already in session {o.session_id!r}, kept there "
                "without an answer (stopped), so an answer under that run id could never "
                "land there",
                hint="start the conversation's next turn under a new run_id; to run that "
                "turn again, rewind the session before it (session.rewind) and delete its "
                "checkpoint",
            )


async def read_history(d: Run) -> tuple[list[Any], int | None]:
    """The session's segments and (a store that keeps one) its version, in one read."""
    session, session_id = d.o.session, d.o.session_id
    assert session is not None and session_id is not None
    if has_capability(session, VersionedSession):  # every built-in store; else unchecked
        history = await cast("VersionedSession", session).history(session_id)
        return history.segments, history.version
    return await session.segments(session_id), None


def conflicted(snapshot: RunSnapshot | None) -> bool:
    """A run whose final session append was refused as a conflict (its head says so)."""
    return (
        snapshot is not None
        and snapshot.status == "failed"
        and (snapshot.error or {}).get("type") == "SessionConflict"
    )


def refused_answer(snapshot: RunSnapshot | None) -> bool:
    """A run that failed on its final answer: an output guardrail or the output type refused
    it (a resume asks the model again instead of judging the same answer again)."""
    return (
        snapshot is not None
        and snapshot.status == "failed"
        and (snapshot.error or {}).get("type") in ("GuardrailTripped", "OutputValidationError")
    )
