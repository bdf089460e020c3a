"""The session version every built-in session store keeps: ``history`` reads it beside
the segments, and an ``append`` checks it (``expected_version``, or the runner's, bound with
``appending_at``). Not part of the session protocol: a store declares it as the
``VersionedSession`` capability.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..errors import SessionConflict
from ..transcript import TranscriptEntry
from ._entries import check_count
from .session_protocol import Segment

__all__ = [
    "Append",
    "SessionHistory",
    "appending_at",
    "check_expected_version",
    "conflict",
    "expected_version_for",
]


@dataclass(frozen=True)
class SessionHistory:
    """A session's segments and its version, read together (``await session.history(sid)``).

    ``version`` is 0 for a session never written and grows by one with every change: an
    append that adds a segment, a trim or rewind that changes something, a ``clear``. Pass it
    back as ``append(..., expected_version=version)`` to append only if nothing changed since.
    """

    segments: list[Segment]
    version: int


# The runner's version check travels with the ``append`` call in a context variable, not as
# an extra argument: a user's subclass or wrapper whose ``append`` has the protocol's four
# parameters and delegates to a built-in store keeps working, and the check still happens
# in the built-in store's transaction. It is bound to one session id, so a wrapper that
# appends elsewhere too is not checked against the wrong session.
_APPEND_AT: ContextVar[tuple[str, int] | None] = ContextVar("lovia_append_at", default=None)


@contextmanager
def appending_at(session_id: str, version: int | None) -> Iterator[None]:
    """Within this block, a built-in store's ``append`` to ``session_id`` checks ``version``."""
    token = _APPEND_AT.set(None if version is None else (session_id, version))
    try:
        yield
    finally:
        _APPEND_AT.reset(token)


def expected_version_for(session_id: str, explicit: Any) -> int | None:
    """The version an ``append`` must find: its own argument, else the runner's (if any)."""
    if explicit is not None:
        return check_expected_version(explicit)
    bound = _APPEND_AT.get()
    return bound[1] if bound is not None and bound[0] == session_id else None


def check_expected_version(value: Any) -> int | None:
    """``append``'s ``expected_version``: ``None`` (no check) or a non-negative int."""
    return None if value is None else check_count(value, "expected_version")


def conflict(session_id: str, expected: int, current: int) -> SessionConflict:
    """The error for an append whose run loaded the session at another version."""
    return SessionConflict(
        f"session {session_id!r} is at version {current}, not {expected}: nothing was appended",
        hint="another run changed this session after this run loaded it; re-run with "
        "if_run_exists='restart' to answer with the new history, or append the entries "
        "yourself without expected_version to keep both",
        session_id=session_id,
        expected_version=expected,
        current_version=current,
    )


@dataclass(frozen=True)
class Append:
    """One ``append`` call with its ids checked and the version it must find (if any)."""

    session_id: str
    run_id: str
    entries: list[TranscriptEntry]
    meta: dict[str, Any] | None
    expected: int | None

    def admits(self, stored: bool, current: int) -> bool:
        """Whether to write this segment, given whether its run is ``stored`` already and
        the session's ``current`` version: not a second time (an append is idempotent by run
        id, whatever the version), and ``SessionConflict`` when the session is not at
        ``expected``."""
        if stored:
            return False
        if self.expected is not None and self.expected != current:
            raise conflict(self.session_id, self.expected, current)
        return True
