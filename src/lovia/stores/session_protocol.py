"""The ``Session`` protocol and its value type ``Segment``.

A session is an append-only list of segments, one per completed run, under a ``session_id``
the caller chooses. Through the protocol a stored segment never changes, and appending
under a ``run_id`` the session already holds does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..transcript import TranscriptEntry

__all__ = ["Segment", "Session"]


@dataclass(frozen=True)
class Segment:
    """One completed run in a session: its id, its own entries and opaque per-run ``meta``."""

    run_id: str
    entries: list[TranscriptEntry] = field(default_factory=list)
    meta: dict[str, Any] | None = None


@runtime_checkable
class Session(Protocol):
    """A conversation store. Four async methods and nothing else.

    Invariants every implementation keeps:

    - ``load(sid)`` is the concatenation of ``segments(sid)``'s entries, in append order.
    - ``append`` adds one segment and returns its run id (generated when ``run_id`` is
      ``None``); when ``run_id`` is already stored in that session it changes nothing and
      returns that id.
    - Sessions with different ids never see each other; ``clear`` empties one session.
    - What goes in and what comes out is copied: mutating either never changes the store.
    """

    async def segments(self, session_id: str) -> list[Segment]: ...

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        """Every entry of the session, in order. A class that subclasses ``Session`` gets
        this default, the concatenation of ``segments``; a store may read it faster."""
        return [e for segment in await self.segments(session_id) for e in segment.entries]

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str: ...

    async def clear(self, session_id: str) -> None: ...
