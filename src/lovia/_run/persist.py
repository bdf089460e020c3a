"""Persistence at the loop's fixed points: one object, no ``if checkpoint:`` in the loop.

The loop calls ``save`` after the run's input, after every model turn and after every tool
result, and ``complete`` / ``fail`` / ``interrupt`` at the end. On success the order is
fixed: checkpoint marked completed, then session append, then (``delete_on_success``)
the snapshot deleted. Without a checkpointer or a session the calls cost nothing.

With a session that keeps a version (every built-in one), the append names the version the
run loaded its history at (``state.session_version``, kept in the head too), so a run that
another run overtook raises ``SessionConflict`` instead of forking the conversation, now and
on every replay.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import LoviaError, SessionConflict, StoreError
from ..session import NOTICE_META_KEY, STATE_META_KEY, TIMING_META_KEY
from ..stores._trim import is_trimmed
from ..stores.capabilities import AppendsNow, VersionedSession, has_capability
from ..stores.checkpoint import Checkpointer, RunHead, RunSnapshot, RunStatus
from ..stores.maintenance import appending_at
from ..stores.run_lease import RunLease
from ..stores.session_protocol import Session
from ..tracing import record_checkpoint_save, record_session_append
from ..transcript import InputEntry, ToolResultEntry, TranscriptEntry, entry_to_dict

if TYPE_CHECKING:
    from .state import RunState

__all__ = ["RunRecorder", "only_trimmed", "segment_meta", "stopped_not_failed"]

log = logging.getLogger("lovia.run")
INFLIGHT_WAIT_S = 120.0
CANCELLED_SAVE_WAIT_S = 5.0


class RunRecorder:
    """Writes one run to its checkpointer and session."""

    __slots__ = (
        "_doubt",
        "_inflight",
        "_turn",
        "checkpointer",
        "completed",
        "delete_on_success",
        "lease",
        "mailbox",
        "run_id",
        "saved",
        "session",
        "session_id",
        "trace_link",
        "tracer",
    )

    def __init__(
        self,
        run_id: str,
        *,
        checkpointer: Checkpointer | None,
        session: Session | None,
        session_id: str | None,
        delete_on_success: bool = False,
        saved: int = 0,
        lease: RunLease | None = None,
    ) -> None:
        self.run_id = run_id
        self.checkpointer = checkpointer
        self.session = session
        self.session_id = session_id
        self.delete_on_success = delete_on_success
        self.saved = saved  # how many of the run's entries the checkpoint already holds
        self.lease = lease
        self._inflight: asyncio.Future[None] | None = None
        # (saved before, saved if it landed) of a write that failed: it may have committed
        self._doubt: tuple[int, int] | None = None
        # saves from the run's task and from tools' recorded steps (ctx.step) take turns
        self._turn = asyncio.Lock()
        self.tracer: Any = None
        self.trace_link: dict[str, str] | None = None
        self.completed = False  # the checkpoint says "completed": nothing may overwrite it
        self.mailbox: Any = None  # the run's Mailbox: its unread messages ride in the head

    def head(
        self,
        state: RunState,
        status: RunStatus = "running",
        *,
        output: Any = None,
        error: dict[str, Any] | None = None,
    ) -> RunHead:
        extra: dict[str, Any] = {}
        fields_ = RunHead.__dataclass_fields__
        if "pending_approvals" in fields_:
            extra["pending_approvals"] = tuple(state.pending_approvals)
        if "budget" in fields_:
            extra["budget"] = dict(state.budget_state)
        extra["trace"] = self.trace_link
        if "timeline" in fields_ and (state.timeline["turns"] or state.timeline["calls"]):
            extra["timeline"] = {k: [list(row) for row in v] for k, v in state.timeline.items()}
        if state.steps and "steps" in fields_:
            extra["steps"] = {k: dict(v) for k, v in state.steps.items()}
        if self.mailbox is not None and status != "completed":
            extra["queued"] = tuple(
                entry_to_dict(InputEntry(role="user", content=c)) for c in self.mailbox.queued()
            )
        if "last_input_tokens" in fields_:
            extra["last_input_tokens"] = state.reported_input_tokens
        return RunHead(
            agent_name=state.agent.name,
            usage=state.usage,
            turns=state.turn,
            status=status,
            output=output,
            error=error,
            context_state=state.context_state,
            updated_at=time.time(),
            session_id=self.session_id,
            started_calls=tuple(state.started_calls),
            session_version=state.session_version,
            # kept only when it differs from the active agent (after a handoff in that turn)
            turn_agent=_other_agent(state.turn_agent, state.agent),
            pending_handoff=None if state.pending_handoff is None else state.pending_handoff.name,
            started_at=state.started_at,
            **extra,
        )

    async def save(self, state: RunState, status: RunStatus = "running", **fields: Any) -> None:
        """Append the entries since the last save and replace the head."""
        if self.checkpointer is None:
            return
        async with self._turn:
            await self._save(state, status, **fields)

    async def _save(self, state: RunState, status: RunStatus, **fields: Any) -> None:
        cp = self.checkpointer
        assert cp is not None
        if self.lease is not None:
            await self.lease.confirm()  # a worker whose run was taken over must not write
        if self._inflight is not None:  # a save cut off by cancellation lands first
            await self._await_inflight()
        if self._doubt is not None:
            await self._resolve_doubt(cp)
        if self.completed and status != "completed":
            return  # C12: the completed head that just landed must not be overwritten
        entries: list[TranscriptEntry] = state.entries
        new = entries[self.saved :]
        count = len(entries)
        head = self.head(state, status, **fields)
        if self._inflight is None:
            # The built-in stores save right here when nothing makes them wait (a WAL file not
            # locked, memory): written before this returns, so no cancellation can cut it off.
            fast = cast("AppendsNow", cp) if has_capability(cp, AppendsNow) else None
            if fast is not None and fast.append_now(self.run_id, new, head):
                self._saved(count, status)
                return
        # A write may commit after its awaiter was cancelled (SQLite runs on its own thread):
        # `saved` follows the write itself, so the next save never appends these entries twice.
        write = asyncio.ensure_future(cp.append(self.run_id, new, head))
        write.add_done_callback(lambda done: self._landed(done, count, status))
        self._inflight = write
        await asyncio.shield(write)

    async def _await_inflight(self) -> None:
        """Wait for the earlier save, at most ``INFLIGHT_WAIT_S``: the store's own deadlines
        (PostgreSQL's call_timeout, SQLite's busy timeout) end it well before that."""
        inflight = self._inflight
        assert inflight is not None
        done, _ = await asyncio.wait([inflight], timeout=INFLIGHT_WAIT_S)
        if not done:
            raise StoreError(
                f"an earlier checkpoint save of run {self.run_id!r} is still unanswered after "
                f"{INFLIGHT_WAIT_S} s; nothing more was written (the next load shows whether "
                f"that save committed)",
                hint="check the store; give it a deadline (PgDeadlines(call_timeout=...))",
            )

    async def _resolve_doubt(self, cp: Checkpointer) -> None:
        """A failed write may still have committed (its connection died after COMMIT was
        sent): the stored entry count says which, so nothing is ever appended twice."""
        assert self._doubt is not None
        before, after = self._doubt
        snap = await cp.load(self.run_id)
        stored = 0 if snap is None else len(snap.entries)
        if stored not in (before, after):
            raise StoreError(
                f"run {self.run_id!r} holds {stored} checkpoint entries, expected {before} or "
                f"{after}: another writer changed it; nothing more was written",
                hint="run one worker per run_id (a RunLease), then resume the run",
            )
        self._doubt = None
        self.saved = stored
        if snap is not None and snap.status == "completed":
            self.completed = True

    def _landed(self, write: asyncio.Future[None], count: int, status: RunStatus) -> None:
        if self._inflight is write:
            self._inflight = None
        if not write.cancelled() and write.exception() is None:
            self._saved(count, status)  # also when its awaiter was cancelled meanwhile
        else:
            self._doubt = (self.saved, count)

    def _saved(self, count: int, status: RunStatus) -> None:
        if self.tracer is not None:
            record_checkpoint_save(
                self.tracer, status=status, entries=count - self.saved, total=count
            )
        self.saved = count
        if status == "completed":
            self.completed = True

    async def complete(self, state: RunState, stored_output: Any) -> float:
        """Checkpoint completed, then session append, then delete_on_success; the time the
        run finished, as the segment records it."""
        await self.save(state, "completed", output=stored_output)
        finished = time.time()
        try:
            await self._append_answer(state, finished, state.session_version)
        except SessionConflict as exc:
            if not await self._append_over_trims(state, finished):
                # The answer never reached the session: the run failed, and its head says
                # why (listed as unfinished, its message is not lost). A resume raises the
                # conflict again instead of appending an answer that never saw the other run.
                self.completed = False  # the one change a completed head may take
                await self.save(state, "failed", output=stored_output, error=exc.to_dict())
                self.completed = True  # and nothing after it
                raise
        if self.delete_on_success and self.checkpointer is not None:
            await self.checkpointer.delete(self.run_id)
        return finished

    async def _append_answer(self, state: RunState, finished: float, version: int | None) -> None:
        """The run's entries as its segment, expected at the session's ``version``."""
        await self.append_session(
            state.entries,
            state.context_state,
            version,
            timing=(state.started_at, finished),
            notice=state.context_notice,
        )

    async def _append_over_trims(self, state: RunState, finished: float) -> bool:
        """Append at the session's new version when the only changes since the run loaded
        its history were ``trim_tool_results`` (S8: every run, entry and call id where it
        was, outputs cut): the run answered the same conversation. True when it landed; a
        run another run overtook, or one a rewind or clear undid part of, is not appended."""
        session, session_id = self.session, self.session_id
        if (
            session is None
            or session_id is None
            or state.history_version != state.session_version  # refused before: stays so
            or not has_capability(session, VersionedSession)
        ):
            return False
        for _ in range(3):  # a trim may land again between the read and the append
            now = await cast("VersionedSession", session).history(session_id)
            if not only_trimmed(state.history, [e for s in now.segments for e in s.entries]):
                return False
            try:
                await self._append_answer(state, finished, now.version)
            except SessionConflict:
                continue
            state.session_version = now.version
            return True
        return False

    async def append_session(
        self,
        entries: Sequence[TranscriptEntry],
        context_state: dict[str, Any],
        session_version: int | None,
        *,
        timing: tuple[float | None, float] | None = None,
        notice: dict[str, Any] | None = None,
    ) -> None:
        """Append the run as one segment (idempotent by run id, so safe on replay); only if
        the session is still at ``session_version`` when the store keeps versions.

        The segment's meta holds the context state the next run carries on from and the
        run's ``timing`` (first start to append, Unix seconds), plus the notice of the
        run's last compaction when there was one."""
        session = self.session
        if session is None or self.session_id is None or not entries:
            return
        meta = segment_meta(context_state, timing, notice)
        with appending_at(self.session_id, session_version):
            await session.append(self.session_id, list(entries), run_id=self.run_id, meta=meta)
        if self.tracer is not None:
            record_session_append(
                self.tracer,
                session_id=self.session_id,
                entries=len(entries),
                version=session_version,
            )

    async def finish_replay(self, snap: RunSnapshot) -> None:
        """Apply the session append again. It repairs a crash between "checkpoint
        completed" and "session appended" whatever happened to the session since, because
        the run never reached it; only a run whose own append was refused as a conflict
        (recorded in its head) is checked again, so it is never appended silently later."""
        conflicted = bool(snap.error) and (snap.error or {}).get("type") == "SessionConflict"
        version = snap.session_version if conflicted else None
        await self.append_session(
            snap.entries, snap.context_state, version, timing=(snap.started_at, snap.updated_at)
        )
        if self.delete_on_success and self.checkpointer is not None:
            await self.checkpointer.delete(self.run_id)

    async def end_badly(self, state: RunState, error: BaseException) -> None:
        """Record a failed or interrupted run; never raises over the run's own error."""
        if self.checkpointer is None or self.completed:
            return  # C12: a failed session append leaves the run completed, for replay to repair
        status: RunStatus = "interrupted" if stopped_not_failed(error) else "failed"
        info = (
            error.to_dict()
            if isinstance(error, LoviaError)
            else {"type": type(error).__name__, "message": str(error)}  # as 0.9.119 stores it
        )
        try:
            await self.save(state, status, error=info)
        except Exception as exc:  # the run's own error is what the caller must see
            log.warning("could not record run %s as %s: %s", self.run_id, status, exc)

    async def park(self, state: RunState) -> None:
        """The run waits for approvals: ``interrupted``, with its pending calls in the head."""
        if self.checkpointer is None or self.completed:
            return
        await self.save(state, "interrupted")

    async def mark_interrupted(self, state: RunState) -> None:
        """Best effort after asyncio cancellation: the head says ``interrupted``."""
        if self.checkpointer is None or self.completed:
            return
        try:
            # bounded: a cancelled run returns at most this long after its cancellation; a
            # save still in flight goes on in the background to its store's own deadline,
            # and the next load of the run shows whether it committed
            await asyncio.wait_for(self.save(state, "interrupted"), CANCELLED_SAVE_WAIT_S)
        except BaseException as exc:  # cancelled again, or the store is gone, or slow
            log.warning("could not mark run %s interrupted: %r", self.run_id, exc)


def segment_meta(
    context_state: dict[str, Any],
    timing: tuple[float | None, float | None] | None = None,
    notice: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A run's segment meta: the context state the next run carries on from, the run's
    timing (first start to append, Unix seconds) when known, and its last compaction's
    notice when there was one."""
    meta: dict[str, Any] = {STATE_META_KEY: context_state}
    if timing is not None and timing[0] is not None and timing[1] is not None:
        meta[TIMING_META_KEY] = {"started_at": timing[0], "finished_at": timing[1]}
    if notice is not None:
        meta[NOTICE_META_KEY] = notice
    return meta


def stopped_not_failed(error: BaseException) -> bool:
    """A run that stopped rather than failed: cancelled, over its budget or its turns, or
    ended by a model error a retry can fix (a rate limit, a 5xx, a dropped connection), as the
    default ``RetryPolicy`` judges it; such a run is ``interrupted`` and resumes as it is."""
    from ..errors import BudgetExceeded, ContextOverflowError, MaxTurnsExceeded, RunCancelled
    from ..settings import RetryPolicy

    if isinstance(error, (RunCancelled, BudgetExceeded, MaxTurnsExceeded)):
        return True
    if isinstance(error, ContextOverflowError):
        return False  # the same request fails the same way
    return bool(RetryPolicy().retry_on(error))


def _other_agent(turn_agent: Any, agent: Any) -> str | None:
    return None if turn_agent is None or turn_agent is agent else str(turn_agent.name)


def only_trimmed(loaded: Sequence[TranscriptEntry], now: Sequence[TranscriptEntry]) -> bool:
    """Whether ``now`` is the history a run ``loaded`` with at most some tool outputs
    trimmed since: the same entries in the same order, a result differing only as a trimmed
    result of the same call."""
    if len(loaded) != len(now):
        return False
    for was, is_ in zip(loaded, now, strict=True):
        if was == is_:
            continue
        if not (isinstance(was, ToolResultEntry) and isinstance(is_, ToolResultEntry)):
            return False
        if was.call_id != is_.call_id or was.is_error != is_.is_error:
            return False
        if not is_trimmed(is_.output):
            return False
    return True
