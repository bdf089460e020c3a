"""The Notes verbs of ``Memory`` (remember, forget, replace, digest, dream), kept apart from the
plugin wiring. Every change is one read-change-write of the store: under a lock between
processes for the file store, under the plugin's own lock otherwise."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from . import curate
from .notes import (
    FileNotesStore,
    NotesStore,
    atomic_write,
    fact_key,
    format_facts,
    normalize_fact,
    parse_facts,
    stamp,
)

if TYPE_CHECKING:
    from ...run_context import RunContext

__all__ = ["NotesOps"]

log = logging.getLogger("lovia.plugins.memory")

_DAY = 86_400.0


def add_to(facts: list[str], new: Sequence[str]) -> list[str]:
    """``facts`` with each of ``new`` stamped and appended, unless a fact with its key is
    already there."""
    keys = {fact_key(f) for f in facts}
    out = list(facts)
    for fact in new:
        key = fact_key(fact)
        if key and key not in keys:
            keys.add(key)
            out.append(stamp(fact))
    return out


def drop_from(facts: list[str], target: str) -> list[str] | None:
    """``facts`` without ``target``: every fact with its key, else the one fact containing
    it; ``None`` when nothing (or more than one fact) matches."""
    key = fact_key(target)
    if not key:
        return None
    kept = [f for f in facts if fact_key(f) != key]
    if len(kept) < len(facts):
        return kept
    containing = [f for f in facts if key in fact_key(f)]
    if len(containing) == 1:
        return [f for f in facts if f is not containing[0]]
    return None


class NotesOps:
    notes: NotesStore
    root: Path
    notes_budget: int
    dream_every_days: float | None
    model: Any

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self.epoch = 0  # a deliberate edit (replace_notes) unpins every session

    def unpin(self) -> None:  # the plugin's own
        raise NotImplementedError

    def _model_for(self, ctx: RunContext[Any] | None) -> Any:
        raise NotImplementedError

    async def _change(
        self, change: Callable[[list[str]], list[str] | None], *, rewrite: bool = False
    ) -> bool:
        """Apply ``change`` to the stored facts. Notes that come out the same are not written
        (``MEMORY.md`` keeps its mtime, which the dream's cadence reads), unless ``rewrite``."""

        def changed_only(facts: list[str]) -> list[str] | None:
            new = change(facts)
            return None if new == facts and not rewrite else new

        async with self._lock:
            if isinstance(self.notes, FileNotesStore):
                before = await self.notes.load()
                after = await self.notes.modify(changed_only)
                return after != before
            facts = await self.notes.load()
            new = change(list(facts))
            if new is None or new == facts:
                return False
            await self.notes.save(new)
            return True

    async def remember(self, fact: str) -> bool:
        """Add a fact to Notes (stamped with this month); False when it is already there."""
        text = normalize_fact(fact)
        if not text:
            raise UserError("remember() needs a fact with some text")
        return await self._change(lambda facts: add_to(facts, [text]))

    async def forget(self, fact: str) -> bool:
        """Remove the note(s) matching ``fact``; False when none matches."""
        return await self._change(lambda facts: drop_from(facts, fact))

    async def notes_body(self) -> str:
        """Notes as ``MEMORY.md`` holds them: one ``- [YYYY-MM] fact`` line each."""
        return format_facts(await self.notes.load())

    async def replace_notes(self, body: str) -> str:
        """Make ``body`` the Notes (bullet lines only, normalised, duplicates dropped,
        unstamped lines stamped with this month) and return the result. Every session
        re-reads Notes at its next run."""
        facts = add_to([], parse_facts(body))
        await self._change(lambda _: facts, rewrite=True)
        self.epoch += 1
        self.unpin()
        return format_facts(facts)

    async def apply_digest(self, facts: Sequence[str], stale: Sequence[str]) -> None:
        """Add the digest's new facts and retire the notes it found stale, in one write."""

        def change(current: list[str]) -> list[str]:
            out = current
            for old in stale:
                out = drop_from(out, old) or out
            return add_to(out, [f for f in facts if normalize_fact(f)])

        await self._change(change)

    # -- dreaming -------------------------------------------------------------------------

    @property
    def marker(self) -> Path:
        return self.root / ".dreamed"

    def dreamed_at(self) -> float | None:
        """When the last dream ran (seconds since the epoch), or None: a method, as in
        0.9.119."""
        try:
            return self.marker.stat().st_mtime
        except OSError:
            return None

    def _touch_marker(self) -> None:
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        self.marker.touch()
        os.utime(self.marker)

    def _notes_changed_since(self, moment: float) -> bool:
        if not isinstance(self.notes, FileNotesStore):
            return True  # a store of its own tells no time: the cadence alone decides
        try:
            return self.notes.path.stat().st_mtime > moment
        except OSError:
            return False

    async def dream_if_due(self, model: Any) -> bool:
        """Dream when Notes are over budget, or when the cadence has come round and Notes
        changed since the last dream. The first time, only start the clock."""
        facts = await self.notes.load()
        over = len(format_facts(facts)) > self.notes_budget
        last = self.dreamed_at()
        if not over:
            if last is None:
                await asyncio.to_thread(self._touch_marker)
                return False
            if self.dream_every_days is None:
                return False
            if time.time() - last < self.dream_every_days * _DAY:
                return False
            if not self._notes_changed_since(last):
                return False
        if model is None:
            return False
        await self.dream(model)
        return True

    async def dream(self, model: Any = None) -> tuple[int, int]:
        """Rewrite Notes with one model call (merge duplicates, settle contradictions, drop
        what expired) and return the note counts ``(before, after)``. The old Notes are kept
        in ``MEMORY.md.bak``; a fact remembered while the model works is kept too."""
        model = model if model is not None else self.model
        if model is None:
            raise UserError(
                "Memory.dream() has no model to curate with",
                hint="pass dream(model=...) or Memory(..., model=...)",
            )
        before = await self.notes.load()
        if not before:
            await asyncio.to_thread(self._touch_marker)
            return (0, 0)
        rewritten = [
            normalize_fact(n) for n in await curate.dream(model, before, self.notes_budget)
        ]
        rewritten = add_to([], [n for n in rewritten if n])
        if not rewritten:
            log.warning("memory.dream: the model returned no notes; Notes left as they were")
            await asyncio.to_thread(self._touch_marker)
            return (len(before), len(before))
        seen = {fact_key(f) for f in before}

        def change(current: list[str]) -> list[str]:
            arrived = [f for f in current if fact_key(f) not in seen]  # during the dream
            return add_to(rewritten, arrived)

        backup = self.root / "MEMORY.md.bak"
        await asyncio.to_thread(atomic_write, backup, format_facts(before))
        await self._change(change)
        await asyncio.to_thread(self._touch_marker)
        return (len(before), len(await self.notes.load()))
