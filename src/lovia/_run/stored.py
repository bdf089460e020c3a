"""The stored run a checkpointed run starts from: its id, and its read under the run's lease
(read again once the lease is held, so the plan sees what the store holds while we own it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..stores.checkpoint import RunSnapshot
from ..stores.run_lease import RunLease
from ..stores.run_options import CheckpointOptions
from .state import new_run_id

if TYPE_CHECKING:
    from .run import Run

__all__ = ["run_id_for", "take"]


def run_id_for(opts: CheckpointOptions | None) -> str:
    """The id given, the resumed snapshot's, or a new one."""
    if opts is None:
        return new_run_id()
    if opts.resume_from is not None:
        return opts.run_id or opts.resume_from.run_id
    return opts.run_id or new_run_id()


async def take(
    opts: CheckpointOptions, run_id: str, lease: RunLease, d: Run | None = None
) -> RunSnapshot | None:
    """``_take``; given the run, its session is read with the lease when the stores can
    (``lease.history``, only when this try took the lease), and the run keeps that read
    (``d.history_read``): a new or resumed run's checks and setup use it instead of reading
    again, a replay the timing its segment recorded."""
    o = d.o if d is not None else None
    stored = await _take(
        opts, run_id, lease, getattr(o, "session", None), getattr(o, "session_id", None)
    )
    if d is not None and lease.history is not None:
        d.history_read = (lease.history.segments, lease.history.version)
    return stored


async def _take(
    opts: CheckpointOptions,
    run_id: str,
    lease: RunLease,
    session: Any = None,
    session_id: str | None = None,
) -> RunSnapshot | None:
    """The stored run, read again once this attempt holds its lease (a replay of a
    completed run takes none). A store that takes the lease and loads the run in one round
    trip does both first (and reads the run's session with them when it can: then
    ``lease.history``): a replay then gives back the lease it took, and a run another
    worker holds is waited for as ever, then read again."""
    if opts.resume_from is None and lease.active:
        tried = await lease.try_acquire_loading(session, session_id)
        if tried is not None:
            taken, stored = tried
            if _replays_without_lease(opts, stored):
                if taken:
                    await lease.release()
                return stored
            if taken:
                return stored  # read after the lease was taken: what the store holds now
            await lease.acquire()
            return await _load(opts, run_id)
    stored = await _load(opts, run_id)
    if not _replays_without_lease(opts, stored):
        await lease.acquire()
        if opts.resume_from is None:
            stored = await _load(opts, run_id)  # what the store holds now that we own it
    return stored


def _replays_without_lease(opts: CheckpointOptions, stored: RunSnapshot | None) -> bool:
    """A completed run is only replayed (no model, no tools; the session append is
    idempotent), so it needs no lease: replays stay one read."""
    return (
        stored is not None
        and stored.status == "completed"
        and opts.resume_from is None
        and opts.if_run_exists in ("resume", "resume_only")
        and not opts.delete_on_success
    )


async def _load(opts: CheckpointOptions, run_id: str) -> RunSnapshot | None:
    if opts.resume_from is not None:
        return opts.resume_from
    snap: RunSnapshot | None = await opts.checkpointer.load(run_id)
    return snap
