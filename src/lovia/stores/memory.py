"""In-memory stores: for tests and throwaway chats. They do not survive the process."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from ..errors import UserTypeError
from ..transcript import TranscriptEntry
from ._checks import check_limit, check_run_ids, check_statuses
from ._codec import encode_meta
from ._entries import checked_entries
from ._text import escape_entries, escape_head, escape_meta, plain_text
from .checkpoint import (
    PendingApproval,
    RunHead,
    RunInfo,
    RunSnapshot,
    check_updated,
    validate_id,
)
from .fork import Forking
from .lease import LeaseClock, MemoryLeases
from .maintenance import (
    Append,
    MaintenancePlan,
    Planner,
    SessionHistory,
    SessionInfo,
    SessionMaintenance,
    fork_origin,
    fork_target_taken,
    title_of,
)
from .retention import DEFAULT_PRUNE_STATUSES, prune_filter
from .session_protocol import Segment

__all__ = ["InMemoryCheckpointer", "InMemorySession"]


class InMemorySession(SessionMaintenance):
    """A ``Session`` in a dict, for tests and throwaway chats: it dies with the process.

    Besides the protocol it has ``history()`` (segments and version), the built-in
    maintenance methods (``trim_tool_results``, ``rewind``, ``rewind_runs``) and
    ``list_sessions()``. Entries are immutable, so copying the lists is enough; ``meta`` is
    deep-copied in and out.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, list[Segment]] = {}
        self._times: dict[str, tuple[float, float]] = {}  # session_id -> (created, updated)
        # never dropped, not even by clear: a version must not come back to a value a run
        # may still hold
        self._versions: dict[str, int] = {}
        self._lock = asyncio.Lock()

    async def segments(self, session_id: str) -> list[Segment]:
        validate_id(session_id, "session_id")
        return [
            Segment(s.run_id, list(s.entries), copy.deepcopy(s.meta))
            for s in self._sessions.get(session_id, ())
        ]

    async def history(self, session_id: str) -> SessionHistory:
        """The session's segments and its version, read together."""
        segments = await self.segments(session_id)  # no await inside: nothing slips in
        return SessionHistory(segments, self._versions.get(session_id, 0))

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        validate_id(session_id, "session_id")
        return [e for s in self._sessions.get(session_id, ()) for e in s.entries]

    async def _append(self, request: Append) -> None:
        encode_meta(request.meta)  # meta JSON cannot hold is refused, as the SQL stores do
        sid = request.session_id
        segments = self._sessions.get(sid, [])
        stored = any(s.run_id == request.run_id for s in segments)
        current = self._versions.get(sid, 0)
        if not request.admits(stored, current):
            return
        meta = escape_meta(copy.deepcopy(request.meta))
        segments.append(Segment(request.run_id, escape_entries(request.entries), meta))
        self._sessions[sid] = segments
        self._versions[sid] = current + 1
        self._touch(sid)

    async def clear(self, session_id: str) -> None:
        validate_id(session_id, "session_id")
        if self._sessions.pop(session_id, None) is not None:
            self._bump(session_id)
        self._times.pop(session_id, None)

    async def _fork(
        self, source_id: str, new_id: str, plan: Callable[[list[Segment]], list[Segment]]
    ) -> list[Segment]:
        copied = plan(await self.segments(source_id))
        if self._sessions.get(new_id):
            raise fork_target_taken(new_id)
        for seg in copied:
            encode_meta(seg.meta)
        self._sessions[new_id] = [
            Segment(s.run_id, list(s.entries), escape_meta(copy.deepcopy(s.meta))) for s in copied
        ]
        self._bump(new_id)
        self._touch(new_id)
        return copied

    # -- maintenance (built-in stores only; not part of the protocol) -----------------------

    async def list_sessions(self) -> list[SessionInfo]:
        """Every non-empty session, most recently changed first."""
        out: list[SessionInfo] = []
        for sid, segments in self._sessions.items():
            created, updated = self._times.get(sid, (0.0, 0.0))
            entries = [e for s in segments for e in s.entries]
            out.append(
                SessionInfo(
                    sid,
                    len(segments),
                    len(entries),
                    created,
                    updated,
                    plain_text(title_of(entries)),
                    fork_origin(segments[0].meta) if segments else None,
                )
            )
        return sorted(out, key=lambda i: i.updated_at, reverse=True)

    async def _maintain(self, session_id: str, plan_for: Planner) -> MaintenancePlan:
        async with self._lock:
            plan = plan_for(self._sessions.get(session_id, []))
            self._apply(session_id, plan)
        return plan

    def _apply(self, session_id: str, plan: MaintenancePlan) -> None:
        if plan.empty:
            return
        self._bump(session_id)
        new = {s.run_id: s for s in plan.replace}
        gone = set(plan.delete)
        kept = [
            new.get(s.run_id, s) for s in self._sessions.get(session_id, ()) if s.run_id not in gone
        ]
        if kept:
            self._sessions[session_id] = kept
            self._touch(session_id)
        else:
            self._sessions.pop(session_id, None)
            self._times.pop(session_id, None)

    def _bump(self, session_id: str) -> None:
        self._versions[session_id] = self._versions.get(session_id, 0) + 1

    def _touch(self, session_id: str) -> None:
        now = time.time()
        created, _ = self._times.get(session_id, (now, now))
        self._times[session_id] = (created, now)


class InMemoryCheckpointer(MemoryLeases, Forking):
    """A ``Checkpointer`` in a dict: no crash recovery, since it dies with the process."""

    def __init__(self, *, clock: LeaseClock | None = None) -> None:
        self._runs: dict[str, tuple[list[TranscriptEntry], RunHead]] = {}
        self._clock = clock or LeaseClock()

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        self._append(run_id, checked_entries(entries), head)

    def append_now(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> bool:
        """The fast path (``AppendsNow``): ``append`` done before this returns (False for a
        subclass that overrides ``append``: its ``append`` runs instead)."""
        if type(self).append is not _APPEND:
            return False
        self._append(run_id, entries, head)
        return True

    def _append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        validate_id(run_id, "run_id")
        if not isinstance(head, RunHead):
            raise UserTypeError(
                f"head must be a RunHead, got {type(head).__name__}",
                hint="pass a RunHead(agent_name=...); a run's head is snapshot.head",
            )
        self._check_fence(run_id)  # a worker whose lease was taken over must not write
        entries, kept = escape_entries(entries), _keep(head)
        stored = self._runs.get(run_id)
        if stored is None:
            self._runs[run_id] = (list(entries), kept)
        else:
            stored[0].extend(entries)
            self._runs[run_id] = (stored[0], kept)

    async def load(self, run_id: str) -> RunSnapshot | None:
        validate_id(run_id, "run_id")
        stored = self._runs.get(run_id)
        if stored is None:
            return None
        return RunSnapshot.of(run_id, list(stored[0]), _copy_head(stored[1]))

    async def delete(self, run_id: str) -> None:
        validate_id(run_id, "run_id")
        self._runs.pop(run_id, None)

    async def update_head(
        self, run_id: str, fn: Callable[[RunHead], RunHead | None]
    ) -> RunHead | None:
        """Replace the run's head with ``fn(head)`` atomically (``None`` from ``fn``: keep it).

        Returns the head now stored, or ``None`` when the run does not exist.
        """
        validate_id(run_id, "run_id")
        stored = self._runs.get(run_id)
        if stored is None:
            return None
        new = check_updated(fn(_copy_head(stored[1])))
        if new is None:
            return _copy_head(stored[1])
        kept = _keep(new)
        self._runs[run_id] = (stored[0], kept)
        return _copy_head(kept)

    async def list_runs(
        self, *, statuses: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[RunSnapshot]:
        """Every stored run (heads and entries), newest first, optionally by status and
        by session."""
        out = [
            RunSnapshot.of(rid, list(e), _copy_head(h))
            for rid, (e, h) in self._runs.items()
            if (statuses is None or h.status in statuses)
            and (session_id is None or h.session_id == session_id)
        ]
        return sorted(out, key=lambda s: s.updated_at, reverse=True)

    async def list_run_heads(
        self, *, statuses: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[RunInfo]:
        """Like ``list_runs`` without the entries: each run's id, head and entry count,
        newest first."""
        wanted = check_statuses(statuses)
        if session_id is not None:
            validate_id(session_id, "session_id")
        out = [
            RunInfo(rid, _copy_head(h), len(e))
            for rid, (e, h) in self._runs.items()
            if (wanted is None or h.status in wanted)
            and (session_id is None or h.session_id == session_id)
        ]
        return sorted(out, key=lambda r: r.updated_at, reverse=True)

    async def load_first_entries(
        self, run_ids: Sequence[str], *, limit: int = 1
    ) -> dict[str, list[TranscriptEntry]]:
        """The first ``limit`` entries of each of these runs (all of a shorter run's), by run
        id; an unknown id is left out."""
        ids = check_run_ids(run_ids)
        count = check_limit(limit)
        return {rid: list(self._runs[rid][0][:count]) for rid in ids if rid in self._runs}

    async def prune(
        self,
        *,
        older_than: float | None = None,
        statuses: Sequence[str] = DEFAULT_PRUNE_STATUSES,
    ) -> int:
        """Delete runs with these statuses last saved over ``older_than`` seconds ago;
        returns how many. Sessions are untouched."""
        cutoff, wanted = prune_filter(older_than, statuses)
        now = self._clock.monotonic()
        leased = {rid for rid, (_, expires, _) in self._leases().items() if expires > now}
        gone = [
            rid
            for rid, (_, head) in self._runs.items()
            if head.status in wanted
            and (cutoff is None or head.updated_at < cutoff)
            and rid not in leased  # a run a live worker holds is never pruned under it
        ]
        for rid in gone:
            del self._runs[rid]
        return len(gone)


_SHARED = frozenset(
    {
        "agent_name",
        "turns",
        "status",
        "last_input_tokens",
        "updated_at",
        "pending_handoff",
        "started_at",
        "session_id",
        "started_calls",
        "session_version",
        "turn_agent",
        "pending_approvals",
    }
)
"""RunHead's fields that hold only immutable values (texts, numbers, tuples of texts and of
frozen ``PendingApproval``s): a copy of the head shares them."""
_COPIED = ("output", "error", "context_state", "budget", "trace", "timeline", "steps", "queued")
"""Its fields that may hold dicts and lists: each copy has its own."""
if {f.name for f in fields(RunHead)} != _SHARED | {"usage", *_COPIED}:  # pragma: no cover
    raise AssertionError("RunHead's fields changed: say here how the in-memory store copies them")

_ATOMS = frozenset({str, int, float, bool, type(None)})


def _copy_head(head: RunHead) -> RunHead:
    """An independent copy of ``head``: what a caller does to its dicts and lists (or to the
    copy's) never reaches the other. Only the mutable fields are copied, JSON values by a
    walk much cheaper than ``copy.deepcopy`` (anything else is deep-copied)."""
    new = copy.copy(head)
    object.__setattr__(new, "usage", head.usage.clone())
    for name in _COPIED:
        object.__setattr__(new, name, _clone(getattr(head, name)))
    return new


def _clone(value: Any) -> Any:
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k: _clone(v) for k, v in value.items()}
    if kind is list:
        return [_clone(v) for v in value]
    if kind is tuple:
        return tuple(_clone(v) for v in value)
    return copy.deepcopy(value)


def _keep(head: RunHead) -> RunHead:
    """The copy of ``head`` the store keeps, lone surrogates escaped (checked by a walk of
    its values first: only a head that has one, or holds other than JSON values and
    ``PendingApproval``s, goes the slower way of ``escape_head``)."""
    plain = all(_plain(getattr(head, name)) for name in _SHARED) and all(
        _plain(getattr(head, name)) for name in _COPIED
    )
    return _copy_head(head if plain else escape_head(head))


def _plain(value: Any) -> bool:
    """True when ``value`` is JSON made of text UTF-8 can encode (no lone surrogate)."""
    kind = type(value)
    if kind is str:
        return value.isascii() or _encodes(value)
    if kind in _ATOMS:
        return True
    if kind is dict:
        return all(type(k) is str and _plain(k) and _plain(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_plain(v) for v in value)
    if kind is PendingApproval:
        return all(_plain(v) for v in vars(value).values())
    return False


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_APPEND = InMemoryCheckpointer.append


if TYPE_CHECKING:  # mypy --strict holds the store to the fork it declares (the edits included)
    from .capabilities import ForksRuns

    _FORKS: type[ForksRuns] = InMemoryCheckpointer
