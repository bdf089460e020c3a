"""What a store may offer beyond its protocol, each capability a declared ``Protocol``.

A session store's core is ``Session`` (``segments``, ``load``, ``append``, ``clear``) and a
checkpointer's is ``Checkpointer`` (``append``, ``load``, ``delete``). Each capability below
is a set of methods a store adds to that core; a caller that wants one asks
``has_capability(store, ListsSessions)`` and uses the plain path when the answer is no. A
store declares a capability by defining its methods (no registration, no base class), and
the conformance kit (``lovia.testing.conformance``) runs the checks of exactly the
capabilities a store has. ``docs/stores.md`` says what each promises.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .checkpoint import RunHead, RunInfo, RunSnapshot
from .lease import LeaseStore

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..transcript import TranscriptEntry
    from .fork import ForkEdits
    from .maintenance import RewindResult, SessionInfo
    from .session_protocol import Segment
    from .session_version import SessionHistory

__all__ = [
    "AppendsNow",
    "Closes",
    "ForksRuns",
    "ForksSessions",
    "LeaseStore",
    "ListsRunHeads",
    "ListsRuns",
    "ListsSessions",
    "LoadsFirstEntries",
    "MarksSessions",
    "PrunesRuns",
    "ReadsOldFiles",
    "RewindsRuns",
    "RewindsSessions",
    "TrimsToolResults",
    "UpdatesHeads",
    "UpdatesHeadsTogether",
    "VersionedSession",
    "capability_methods",
    "has_capability",
]


_OFFERED: set[tuple[type, type]] = set()


def has_capability(store: Any, capability: type) -> bool:
    """Whether ``store`` offers ``capability`` (one of this module's protocols): it has every
    method the capability names. Remembered per class when the class defines them, so
    asking on every save costs next to nothing, with the capability or without it."""
    cls = type(store)
    if (cls, capability) in _OFFERED:
        return True
    names = capability_methods(capability)
    if not all(_has(store, cls, name) for name in names):
        return False
    if all(_has(cls, cls, name) for name in names):
        _OFFERED.add((cls, capability))
    return True


def _has(obj: Any, cls: type, name: str) -> bool:
    """Whether ``obj`` (a store or its class ``cls``) has the member ``name``: a property of
    the class (not read here), else a method."""
    return isinstance(getattr(cls, name, None), property) or callable(getattr(obj, name, None))


@functools.cache
def capability_methods(capability: type) -> tuple[str, ...]:
    """The methods (and properties) ``capability`` names, in the order it declares them."""
    return tuple(
        n
        for n, v in vars(capability).items()
        if not n.startswith("_") and (callable(v) or isinstance(v, property))
    )


# -- every store -----------------------------------------------------------------------------


@runtime_checkable
class Closes(Protocol):
    """``close()`` releases what the store opened (a file, a pool); called once at the end."""

    async def close(self) -> None: ...


# -- session stores --------------------------------------------------------------------------


@runtime_checkable
class VersionedSession(Protocol):
    """The session version: ``history`` reads the segments with a version that every change
    bumps, and ``append`` takes ``expected_version=`` (``SessionConflict``, nothing written,
    when the session moved on). The runner also binds the version it loaded to its own
    ``append`` call through ``lovia.stores.maintenance.expected_version_for``, so a wrapper
    whose ``append`` has the four protocol parameters still gets the check."""

    async def history(self, session_id: str) -> SessionHistory: ...

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> str: ...


@runtime_checkable
class ListsSessions(Protocol):
    """``list_sessions()``: every non-empty session, most recently changed first (the chat
    list of ``lovia web`` and ``lovia chat``)."""

    async def list_sessions(self) -> list[SessionInfo]: ...


@runtime_checkable
class MarksSessions(Protocol):
    """``session_marks(after, limit)``: ``(seq, session_id, run_id)`` of the newest ``limit``
    stored segments whose row number ``seq`` is above ``after``, in ``seq`` order; one indexed
    range read, so a caller that watches for new sessions (the chat list) reads only the
    newest rows."""

    async def session_marks(self, after: int, limit: int) -> list[tuple[int, str, str]]: ...


@runtime_checkable
class TrimsToolResults(Protocol):
    """``trim_tool_results``: cut stored tool outputs outside the last ``keep_runs`` runs."""

    async def trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> int: ...


@runtime_checkable
class RewindsSessions(Protocol):
    """``rewind``: keep a session's first ``keep_entries`` entries; how many were removed."""

    async def rewind(self, session_id: str, *, keep_entries: int) -> int: ...


@runtime_checkable
class RewindsRuns(Protocol):
    """``rewind_runs``: ``rewind`` that also names the runs it cut or dropped (the caller
    deletes their checkpoints)."""

    async def rewind_runs(self, session_id: str, *, keep_entries: int) -> RewindResult: ...


@runtime_checkable
class ForksSessions(Protocol):
    """``fork``: copy a session (whole, up to a run, or its first entries) under a new id,
    atomically."""

    async def fork(
        self,
        session_id: str,
        new_session_id: str,
        *,
        upto_run: str | None = None,
        keep_entries: int | None = None,
    ) -> list[Segment]: ...


@runtime_checkable
class ReadsOldFiles(Protocol):
    """A store that reads a file an older lovia wrote as it is, when opened read-only:
    ``needs_migration`` is True when it did (``lovia migrate`` converts the file). The CLI
    then tells the user so; a store without it never needs migrating."""

    @property
    def needs_migration(self) -> bool: ...


# -- checkpointers ---------------------------------------------------------------------------


@runtime_checkable
class ListsRuns(Protocol):
    """``list_runs``: every stored run (heads and entries), newest first, by status and, when
    the method takes ``session_id``, by session."""

    async def list_runs(self, *, statuses: Sequence[str] | None = None) -> list[RunSnapshot]: ...


@runtime_checkable
class ListsRunHeads(Protocol):
    """``list_run_heads``: each run's id, head and entry count, newest first, without reading
    the entries (a run whose entries are damaged is still listed)."""

    async def list_run_heads(
        self, *, statuses: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[RunInfo]: ...


@runtime_checkable
class LoadsFirstEntries(Protocol):
    """``load_first_entries``: the first ``limit`` entries of many runs in one read (a chat
    list's titles), by run id; an unknown id is left out."""

    async def load_first_entries(
        self, run_ids: Sequence[str], *, limit: int = 1
    ) -> dict[str, list[TranscriptEntry]]: ...


@runtime_checkable
class UpdatesHeads(Protocol):
    """``update_head(run_id, fn)``: replace the head with ``fn(head)`` atomically (``None``
    from ``fn`` keeps it); the stored head, or ``None`` for an unknown run. Approvals use it;
    without it they load, change and append an empty save under the run's lease."""

    async def update_head(
        self, run_id: str, fn: Callable[[RunHead], RunHead | None]
    ) -> RunHead | None: ...


@runtime_checkable
class UpdatesHeadsTogether(Protocol):
    """``update_head_with(run_id, fn, then)``: ``update_head``, and once the head changed,
    ``await then(conn, head)`` on the store's connection in the same transaction, so what
    ``then`` writes (a job queue's job) commits with the head or not at all."""

    async def update_head_with(
        self,
        run_id: str,
        fn: Callable[[RunHead], RunHead | None],
        then: Callable[[Any, RunHead], Awaitable[None]],
    ) -> RunHead | None: ...


@runtime_checkable
class PrunesRuns(Protocol):
    """``prune``: delete runs with these statuses saved over ``older_than`` seconds ago,
    never one a live worker holds; returns how many."""

    async def prune(
        self, *, older_than: float | None = None, statuses: Sequence[str] = ...
    ) -> int: ...


@runtime_checkable
class ForksRuns(Protocol):
    """``fork``: a new run from an old one's turn, ready to resume there, with the edits at
    the fork point that ``ForkEdits`` declares; atomic."""

    async def fork(
        self, run_id: str, new_run_id: str, *, at_turn: int, **edits: Unpack[ForkEdits]
    ) -> RunSnapshot: ...


@runtime_checkable
class AppendsNow(Protocol):
    """The fast path: ``append_now`` saves like ``append`` before it returns (no await, so
    no cancellation can cut the save off) and returns True, or returns False having written
    nothing (the runner then awaits ``append``). A store that must wait for I/O returns
    False."""

    def append_now(
        self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead
    ) -> bool: ...
