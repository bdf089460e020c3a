"""Plan session maintenance (trim, rewind, fork) once, as pure functions over a session's
segments, and run it once for every built-in store (``SessionMaintenance``). The session
version the stores keep is in ``session_version`` (its names are re-exported here).

``trim_plan`` and ``rewind_plan`` look at the segments of one session and return a
``MaintenancePlan``: which segments to replace (same ``run_id``, new entries and meta), which
to delete, and the count the maintenance method returns. They do no I/O; every built-in
store loads the segments, asks for a plan and applies it in one transaction, so the
semantics are written once and cannot drift between backends.
"""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..transcript import (
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from ._entries import check_count, checked_entries, checked_meta
from ._trim import is_trimmed, marker_ref, output_digest, trim_marker, trimmed_text
from .checkpoint import validate_id
from .fork import ForkTargetTaken
from .session_protocol import Segment
from .session_version import (
    Append,
    SessionHistory,
    appending_at,
    check_expected_version,
    conflict,
    expected_version_for,
)

__all__ = [
    "Append",
    "MaintenancePlan",
    "Planner",
    "RewindResult",
    "SessionHistory",
    "SessionInfo",
    "SessionMaintenance",
    "append_run_id",
    "appending_at",
    "check_count",
    "check_expected_version",
    "conflict",
    "expected_version_for",
    "is_trimmed",
    "marker_ref",
    "output_digest",
    "rewind_plan",
    "session_info",
    "title_of",
    "trim_marker",
    "trim_plan",
]

TITLE_CHARS = 80


@dataclass(frozen=True)
class MaintenancePlan:
    """What a trim or rewind changes in one session.

    ``replace`` holds the new version of each changed segment (matched by ``run_id``; order
    is unchanged), ``delete`` the ``run_id``s to remove, and ``count`` what the maintenance
    method returns: results trimmed, or entries removed.
    """

    replace: tuple[Segment, ...] = ()
    delete: tuple[str, ...] = ()
    count: int = 0

    @property
    def affected_run_ids(self) -> tuple[str, ...]:
        """Every run the plan changes or deletes, replaced ones first."""
        return tuple(s.run_id for s in self.replace) + self.delete

    @property
    def empty(self) -> bool:
        return not self.replace and not self.delete


@dataclass(frozen=True)
class RewindResult:
    """What ``rewind_runs`` did: entries removed, and the runs it truncated or deleted.

    Delete the checkpoints of ``affected_run_ids``: a later resume of one of those
    runs would otherwise write the undone tail back.
    """

    removed: int
    affected_run_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionInfo:
    """One session as ``list_sessions()`` reports it (times are Unix seconds)."""

    session_id: str
    runs: int
    entries: int
    created_at: float
    updated_at: float
    title: str | None = None
    """The first user input of the session, cut to 80 characters (``None`` if there is none)."""
    forked_from: dict[str, Any] | None = None
    """Where a fork was copied from (``{"session_id": ..., "upto_run"/"keep_entries": ...}``),
    ``None`` for a session that is not a fork."""


# -- trim -------------------------------------------------------------------------------


def trim_plan(segments: Sequence[Segment], *, keep_chars: int, keep_runs: int) -> MaintenancePlan:
    """Plan cutting tool outputs to ``keep_chars`` in every run but the last ``keep_runs``.

    Only ``ToolResultEntry.output`` changes: structure, order and ``call_id`` pairing stay,
    and ``meta`` is kept. An output that is short enough, that its marker would not make
    shorter, or that already ends with a trim marker, is left alone, so a second trim with
    the same arguments plans nothing. The marker names the output's content digest, the key a
    context policy with a result store archived it under (``lovia.stores._trim``).
    """
    check_count(keep_chars, "keep_chars")
    check_count(keep_runs, "keep_runs")
    end = max(len(segments) - keep_runs, 0)
    changed: list[Segment] = []
    count = 0
    for seg in segments[:end]:
        new_entries: list[TranscriptEntry] = []
        trimmed_here = 0
        for e in seg.entries:
            output = _trimmed(e, keep_chars)
            if output is None:
                new_entries.append(e)
            else:
                # the structured value and any images are the whole output too: they go
                new_entries.append(
                    e.model_copy(update={"output": output, "raw": None, "parts": None})
                )
                trimmed_here += 1
        if trimmed_here:
            changed.append(Segment(seg.run_id, new_entries, seg.meta))
            count += trimmed_here
    return MaintenancePlan(replace=tuple(changed), count=count)


def _trimmed(e: TranscriptEntry, keep_chars: int) -> str | None:
    """``e``'s output cut to ``keep_chars`` with its marker, or ``None`` to leave it."""
    return trimmed_text(e.output, keep_chars) if isinstance(e, ToolResultEntry) else None


# -- rewind ----------------------------------------------------------------------------


def rewind_plan(segments: Sequence[Segment], *, keep_entries: int) -> MaintenancePlan:
    """Plan keeping the first ``keep_entries`` entries of the flat ``load()`` view.

    Runs wholly after the cut are deleted. A run the cut falls inside is truncated, and every
    kept tool call whose result was cut away goes too (it counts as removed), so the
    transcript stays well formed; a changed run's ``meta`` becomes ``None`` because its
    context state described the whole run. A run left with no entries is deleted. A cut at
    or past the end plans nothing; ``keep_entries=0`` deletes every run.
    """
    check_count(keep_entries, "keep_entries")
    flat = [e for seg in segments for e in seg.entries]
    if keep_entries >= len(flat):
        return MaintenancePlan()
    orphaned = _calls_answered_at_or_after(flat, keep_entries)
    replace: list[Segment] = []
    delete: list[str] = []
    start = 0
    for seg in segments:
        size = len(seg.entries)
        positions = range(start, min(start + size, keep_entries))
        if size == 0 and (start > keep_entries or keep_entries == 0):
            delete.append(seg.run_id)  # a run without entries that lies after the cut
            continue
        start += size
        kept = [flat[i] for i in positions if i not in orphaned]
        if len(kept) == size:
            continue
        if kept:
            replace.append(Segment(seg.run_id, kept, None))
        else:
            delete.append(seg.run_id)
    remaining = keep_entries - len(orphaned)
    return MaintenancePlan(
        replace=tuple(replace), delete=tuple(delete), count=len(flat) - remaining
    )


def _calls_answered_at_or_after(flat: Sequence[TranscriptEntry], cut: int) -> set[int]:
    """Positions (< ``cut``) of tool calls whose answering result sits at or after ``cut``.

    Pairing follows ``dangling_tool_calls``: a result answers the latest still-open earlier
    call with its ``call_id``. Calls that were never answered are not touched: a rewind does
    not repair what was dangling before, it only keeps the cut from creating new orphans.
    """
    open_calls: dict[str, list[int]] = {}
    orphaned: set[int] = set()
    for pos, e in enumerate(flat):
        if isinstance(e, ToolCallEntry):
            open_calls.setdefault(e.call_id, []).append(pos)
        elif isinstance(e, ToolResultEntry):
            stack = open_calls.get(e.call_id)
            if stack:
                call_pos = stack.pop()
                if call_pos < cut <= pos:
                    orphaned.add(call_pos)
    return orphaned


# -- helpers the stores share ----------------------------------------------------------------


def title_of(entries: Sequence[TranscriptEntry]) -> str | None:
    """The first user input's text, cut to 80 characters: a session's title in listings."""
    for e in entries:
        if isinstance(e, InputEntry) and e.role == "user":
            text = _words(e.text)
            if text:
                return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"
    return None


def _words(text: str) -> str:
    """``" ".join(text.split())`` as far as a title needs it: the words of a prefix are a
    prefix of the whole text's (only its last word may go on), so once they pass the title's
    length the rest need not be split; a 200 KB message is not split whole for 80 characters."""
    size = 4 * TITLE_CHARS
    while size < len(text):
        known = " ".join(text[:size].split())
        if len(known) > TITLE_CHARS:
            return known
        size *= 8
    return " ".join(text.split())


def append_run_id(session_id: str, run_id: str | None) -> str:
    """Check ``append``'s ids; the run id to store (a new one when ``run_id`` is ``None``)."""
    validate_id(session_id, "session_id")
    return validate_id(run_id, "run_id") if run_id is not None else uuid.uuid4().hex


def session_info(row: Sequence[Any]) -> SessionInfo:
    """A ``list_sessions`` row (id, runs, entries, created, updated, title, the first run's
    meta as JSON text) as ``SessionInfo``."""
    origin = None
    if len(row) > 6 and row[6]:
        try:
            origin = fork_origin(json.loads(row[6]))
        except ValueError:
            origin = None  # an unreadable meta only hides the origin from the listing
    return SessionInfo(
        str(row[0]), int(row[1]), int(row[2] or 0), float(row[3]), float(row[4]), row[5], origin
    )


# -- fork ---------------------------------------------------------------------------------

FORK_META_KEY = "forked_from"


def fork_origin(meta: Any) -> dict[str, Any] | None:
    """The origin a fork's first run records in its ``meta``, or ``None``."""
    found = meta.get(FORK_META_KEY) if isinstance(meta, dict) else None
    return dict(found) if isinstance(found, dict) else None


def fork_plan(
    segments: Sequence[Segment],
    source_id: str,
    *,
    upto_run: str | None = None,
    keep_entries: int | None = None,
) -> list[Segment]:
    """The segments a fork of ``source_id`` holds: every one, those up to and including run
    ``upto_run``, or the first ``keep_entries`` entries of the flat view (cut as a rewind
    cuts). The first records the origin in its ``meta``. ``UserError`` when the point is
    not in the session or nothing would be copied."""
    if upto_run is not None and keep_entries is not None:
        raise UserError(
            "fork at a run or at an entry, not both", hint="pass upto_run= or keep_entries="
        )
    kept = list(segments)
    origin: dict[str, Any] = {"session_id": source_id}
    if upto_run is not None:
        ids = [s.run_id for s in segments]
        if upto_run not in ids:
            raise UserError(
                f"session {source_id!r} has no run {upto_run!r}",
                hint="lovia sessions export shows the session's run ids",
            )
        kept = kept[: ids.index(upto_run) + 1]
        origin["upto_run"] = upto_run
    elif keep_entries is not None:
        plan = rewind_plan(segments, keep_entries=keep_entries)
        replaced = {s.run_id: s for s in plan.replace}
        kept = [replaced.get(s.run_id, s) for s in segments if s.run_id not in plan.delete]
        origin["keep_entries"] = keep_entries
    kept = [s for s in kept if s.entries]
    if not kept:
        raise UserError(
            f"a fork of session {source_id!r} at that point would be empty",
            hint="fork a session that has entries, or at a later point",
        )
    first = kept[0]
    kept[0] = Segment(first.run_id, first.entries, {**(first.meta or {}), FORK_META_KEY: origin})
    return kept


def fork_target_taken(session_id: str) -> UserError:
    """The error for a fork into a session that has entries already."""
    return ForkTargetTaken(
        f"session {session_id!r} exists already; a fork never writes into a session",
        hint="pass a new session id for the fork",
    )


# -- the maintenance methods, once for every built-in store ----------------------------------

Planner = Callable[[list[Segment]], MaintenancePlan]


class SessionMaintenance(ABC):
    """``append``, ``trim_tool_results``, ``rewind`` and ``rewind_runs`` for a built-in store.

    Each built-in session store inherits these and supplies ``_append`` (write one checked
    ``Append`` in one transaction, if ``Append.admits`` it) and ``_maintain`` (load the
    session's segments, ask the planner and apply the plan, all in one transaction).
    """

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> str:
        """Append one segment; ``expected_version`` set: only if the session is still at it
        (``SessionConflict`` otherwise, nothing written). A stored ``run_id`` returns at
        once, whatever the version."""
        rid = append_run_id(session_id, run_id)
        expected = expected_version_for(session_id, expected_version)
        entries = checked_entries(entries)
        await self._append(Append(session_id, rid, entries, checked_meta(meta), expected))
        return rid

    @abstractmethod
    async def _append(self, request: Append) -> None: ...

    async def trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> int:
        """Cut stored tool outputs to ``keep_chars`` except in the last ``keep_runs`` runs.

        Returns how many outputs were trimmed; a second call trims nothing. Without a
        ``FileResultStore`` on the context policy a trimmed output is gone for good.
        """
        validate_id(session_id, "session_id")
        trim_plan([], keep_chars=keep_chars, keep_runs=keep_runs)  # bad arguments fail first

        def plan(segments: list[Segment]) -> MaintenancePlan:
            return trim_plan(segments, keep_chars=keep_chars, keep_runs=keep_runs)

        return (await self._maintain(session_id, plan)).count

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Keep the first ``keep_entries`` entries of ``load()`` and drop the rest.

        Returns how many entries were removed (tool calls whose results were cut count too).
        Use ``rewind_runs`` to learn which runs changed, and delete their checkpoints.
        """
        return (await self.rewind_runs(session_id, keep_entries=keep_entries)).removed

    async def rewind_runs(self, session_id: str, *, keep_entries: int) -> RewindResult:
        """``rewind``, also naming the runs it truncated or deleted (delete their checkpoints)."""
        validate_id(session_id, "session_id")
        rewind_plan([], keep_entries=keep_entries)  # bad arguments fail before any I/O

        def plan(segments: list[Segment]) -> MaintenancePlan:
            return rewind_plan(segments, keep_entries=keep_entries)

        result = await self._maintain(session_id, plan)
        return RewindResult(result.count, result.affected_run_ids)

    async def fork(
        self,
        session_id: str,
        new_session_id: str,
        *,
        upto_run: str | None = None,
        keep_entries: int | None = None,
    ) -> list[Segment]:
        """Copy session ``session_id`` into the new session ``new_session_id``: whole, up to
        and including run ``upto_run``, or its first ``keep_entries`` entries. The source is
        unchanged; the fork's first run records the origin in its ``meta`` (``list_sessions``
        shows it as ``forked_from``). One transaction: a crash leaves no fork or a whole one.
        Returns the copied segments; ``UserError`` when the new id holds a session already,
        or when the point is not in the source or nothing would be copied."""
        validate_id(session_id, "session_id")
        validate_id(new_session_id, "new_session_id")
        if session_id == new_session_id:
            raise UserError("a fork needs a session id of its own", hint="pass another id")
        if keep_entries is not None:
            check_count(keep_entries, "keep_entries")

        def plan(segments: list[Segment]) -> list[Segment]:
            return fork_plan(segments, session_id, upto_run=upto_run, keep_entries=keep_entries)

        return await self._fork(session_id, new_session_id, plan)

    @abstractmethod
    async def _fork(
        self, source_id: str, new_id: str, plan: Callable[[list[Segment]], list[Segment]]
    ) -> list[Segment]:
        """Read the source's segments, plan, refuse a new id that has entries, and write the
        planned segments under it, atomically."""

    @abstractmethod
    async def _maintain(self, session_id: str, plan_for: Planner) -> MaintenancePlan:
        """Load the session's segments, plan with ``plan_for`` and apply it, atomically."""
