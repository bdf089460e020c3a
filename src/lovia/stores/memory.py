"""In-memory stores: for tests and throwaway chats. They do not survive the process (E4)."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Sequence
from typing import Any

from ..transcript import TranscriptEntry
from .checkpoint import RunHead, RunSnapshot, validate_id
from .session import Segment

__all__ = ["InMemoryCheckpointer", "InMemorySession"]


class InMemorySession:
    """A ``Session`` in a dict. Entries are immutable, so copying the lists is enough."""

    def __init__(self) -> None:
        self._sessions: dict[str, list[Segment]] = {}
        self._lock = asyncio.Lock()

    async def segments(self, session_id: str) -> list[Segment]:
        validate_id(session_id, "session_id")
        return [
            Segment(s.run_id, list(s.entries), copy.deepcopy(s.meta))
            for s in self._sessions.get(session_id, ())
        ]

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        validate_id(session_id, "session_id")
        return [e for s in self._sessions.get(session_id, ()) for e in s.entries]

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        validate_id(session_id, "session_id")
        run_id = validate_id(run_id, "run_id") if run_id is not None else uuid.uuid4().hex
        segments = self._sessions.setdefault(session_id, [])
        if any(s.run_id == run_id for s in segments):
            return run_id
        segments.append(Segment(run_id, list(entries), copy.deepcopy(meta)))
        return run_id

    async def clear(self, session_id: str) -> None:
        validate_id(session_id, "session_id")
        self._sessions.pop(session_id, None)


class InMemoryCheckpointer:
    """A ``Checkpointer`` in a dict: no crash recovery, since it dies with the process (E4)."""

    def __init__(self) -> None:
        self._runs: dict[str, tuple[list[TranscriptEntry], RunHead]] = {}

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        validate_id(run_id, "run_id")
        stored = self._runs.get(run_id)
        if stored is None:
            self._runs[run_id] = (list(entries), _copy_head(head))
        else:
            stored[0].extend(entries)
            self._runs[run_id] = (stored[0], _copy_head(head))

    async def load(self, run_id: str) -> RunSnapshot | None:
        validate_id(run_id, "run_id")
        stored = self._runs.get(run_id)
        if stored is None:
            return None
        return RunSnapshot.of(run_id, list(stored[0]), _copy_head(stored[1]))

    async def delete(self, run_id: str) -> None:
        validate_id(run_id, "run_id")
        self._runs.pop(run_id, None)

    async def list_runs(self, *, statuses: Sequence[str] | None = None) -> list[RunSnapshot]:
        """Every stored run (heads and entries), newest first, optionally by status."""
        out = [
            RunSnapshot.of(rid, list(e), _copy_head(h))
            for rid, (e, h) in self._runs.items()
            if statuses is None or h.status in statuses
        ]
        return sorted(out, key=lambda s: s.updated_at, reverse=True)


def _copy_head(head: RunHead) -> RunHead:
    return RunHead.from_dict(copy.deepcopy(head.to_dict()))
