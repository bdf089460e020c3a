"""Stores that each break one promise of the contract on purpose: the conformance kit must
fail each of them, naming the broken promise (``test_conformance_kit.py``)."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lovia import RunHead, RunSnapshot, Segment, TranscriptEntry
from lovia.transcript import entry_from_dict, entry_to_dict


class TwiceSession:
    """Forgets that a run id already stored makes an append a no-op: a re-submitted run is
    stored twice."""

    def __init__(self) -> None:
        self._data: dict[str, list[Segment]] = {}

    async def segments(self, session_id: str) -> list[Segment]:
        return copy.deepcopy(self._data.get(session_id, []))

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return [e for s in await self.segments(session_id) for e in s.entries]

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        rid = run_id or uuid.uuid4().hex
        seg = Segment(rid, copy.deepcopy(list(entries)), copy.deepcopy(meta))
        self._data.setdefault(session_id, []).append(seg)
        return rid

    async def clear(self, session_id: str) -> None:
        self._data.pop(session_id, None)


class LosingSession(TwiceSession):
    """Keeps each session in a JSON file it reads, changes and writes back with a pause in
    between and no lock: of two appends at once, one is lost."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._file = path / "sessions.json"

    def _read(self) -> dict[str, list[dict[str, Any]]]:
        if not self._file.exists():
            return {}
        data: dict[str, list[dict[str, Any]]] = json.loads(self._file.read_text())
        return data

    async def segments(self, session_id: str) -> list[Segment]:
        return [
            Segment(s["run_id"], [entry_from_dict(e) for e in s["entries"]], s["meta"])
            for s in self._read().get(session_id, [])
        ]

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        data = self._read()
        rid = run_id or uuid.uuid4().hex
        if any(s["run_id"] == rid for s in data.get(session_id, [])):
            return rid
        await asyncio.sleep(0.01)  # the write lands after the read, unguarded
        row = {"run_id": rid, "entries": [entry_to_dict(e) for e in entries], "meta": meta}
        data.setdefault(session_id, []).append(copy.deepcopy(row))
        self._file.write_text(json.dumps(data))
        return rid

    async def clear(self, session_id: str) -> None:
        data = self._read()
        data.pop(session_id, None)
        self._file.write_text(json.dumps(data))


class FileLosingSession(LosingSession):
    """The same read, change and write back, with no pause an event loop could switch at:
    in one process appends never overlap, but two processes still lose each other's."""

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        data = self._read()
        rid = run_id or uuid.uuid4().hex
        if any(s["run_id"] == rid for s in data.get(session_id, [])):
            return rid
        # another process writes meanwhile, and this write drops its run (a blocking pause on
        # purpose: no other task of this process runs in between)
        time.sleep(0.02)  # noqa: ASYNC251
        row = {"run_id": rid, "entries": [entry_to_dict(e) for e in entries], "meta": meta}
        data.setdefault(session_id, []).append(copy.deepcopy(row))
        part = self._file.with_name(f"{self._file.name}.{os.getpid()}")
        part.write_text(json.dumps(data))
        os.replace(part, self._file)  # whole files only: what is lost is a whole append
        return rid


class ReorderingCheckpointer:
    """Returns a run's entries grouped by kind instead of in the order they were saved."""

    def __init__(self) -> None:
        self._runs: dict[str, tuple[list[TranscriptEntry], RunHead]] = {}

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        stored = self._runs.get(run_id, ([], head))[0]
        self._runs[run_id] = (stored + copy.deepcopy(list(entries)), head)

    async def load(self, run_id: str) -> RunSnapshot | None:
        if run_id not in self._runs:
            return None
        entries, head = self._runs[run_id]
        ordered = sorted(entries, key=lambda e: type(e).__name__)
        return RunSnapshot.of(run_id, copy.deepcopy(ordered), head)

    async def delete(self, run_id: str) -> None:
        self._runs.pop(run_id, None)


def twice(path: Path) -> TwiceSession:
    return TwiceSession()


def losing(path: Path) -> LosingSession:
    return LosingSession(path)


def file_losing(path: Path) -> FileLosingSession:
    return FileLosingSession(path)


def reordering(path: Path) -> ReorderingCheckpointer:
    return ReorderingCheckpointer()
