"""``Memory``: Notes in the system prompt, an archive to ``recall`` from, and the run-end
curation that keeps both. See the memory page of the docs for the whole picture.

Cross-run state lives on the plugin object (the stores, the per-session Notes snapshots, the
background curation tasks) and on disk; every run builds its tools over it in ``setup``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Any, Literal

from ...errors import UserError
from ...events import RunCompleted, RunFailed
from ...hooks import AgentHooks
from ...run_context import RunContext
from ..base import PluginInstance
from . import curate
from ._ops import NotesOps
from ._tools import memory_tools
from .index import Doc, Index, KeywordIndex
from .notes import FileNotesStore, NotesStore, format_facts
from .vector import Embedder, VectorIndex

__all__ = ["Memory"]

log = logging.getLogger("lovia.plugins.memory")

_GUIDE = (
    "## Memory\n"
    "You have a memory that lasts across conversations.\n"
    "- NOTES below are durable facts about the user and their work, always in view. They "
    "are as they stood when this conversation began: what was remembered or forgotten "
    "since shows in the conversation itself.\n"
    "- `remember(fact)` saves a durable fact: a preference, a correction, a lasting "
    "detail. One short self-contained line.\n"
    "- `forget(fact)` removes a note that is wrong or no longer true.\n"
    "{recall}"
    "Call `remember` at once when the user asks you to remember something or corrects "
    "you; everything else is sorted out when the conversation ends, so do not note task "
    "details. Note only what the user said or confirmed, never your own conclusions."
)
_RECALL_LINE = (
    "- `recall(query)` searches past conversations, for when the user refers to something "
    "earlier or you need context your notes lack.\n"
)


@dataclass
class _Pinned:
    text: str
    epoch: int
    last_end: float


class Memory(NotesOps):
    """Long-term memory across conversations: Notes (``MEMORY.md``, always in the prompt)
    and an archive of past conversations searched with ``recall``.

    ``Memory(root)`` keeps both under ``root``; ``embedder=`` adds a semantic arm to the
    archive, ``index=`` replaces it (``None``: no archive, no ``recall``), ``notes=`` swaps
    the Notes store. At each run's end one model call curates Notes and files a summary in
    the archive (``auto_curate``); ``curate_in_background`` leaves that to a task that
    ``drain()`` waits for.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = "./.lovia/memory",
        notes: NotesStore | None = None,
        index: Index | EllipsisType | None = ...,
        embedder: Embedder | None = None,
        auto_curate: bool = True,
        curate_in_background: bool = False,
        expand_query: bool | Literal["auto"] = "auto",
        summarize_recall: bool = True,
        recall_k: int = 5,
        notes_budget: int = 8000,
        dream_every_days: float | None = 3.0,
        notes_refresh_after: float = 300.0,
        model: Any = None,
        name: str = "memory",
    ) -> None:
        if embedder is not None and index is not ...:
            raise UserError(
                "Memory(embedder=..., index=...): pass one or the other, not both",
                hint="embedder= builds the default index with a vector arm; to use your own "
                "index, put the VectorIndex in it yourself (KeywordIndex(...) | VectorIndex(...))",
            )
        if notes_refresh_after < 0:
            raise UserError("Memory(notes_refresh_after=...) cannot be negative")
        if recall_k < 1 or notes_budget < 1:
            raise UserError("Memory: recall_k and notes_budget must be 1 or more")
        self.root = Path(root)
        self.notes: NotesStore = (
            notes if notes is not None else FileNotesStore(self.root / "MEMORY.md")
        )
        self.embedder = embedder
        # only the index built here without an embedder is known to search words alone; an
        # index of the caller's own is searched as asked unless expand_query=True
        self._lexical = index is ... and embedder is None
        if index is ...:
            keyword = KeywordIndex(self.root / "archive.db")
            self.index: Index | None = (
                keyword | VectorIndex(self.root / "vectors.db", embedder) if embedder else keyword
            )
        else:
            self.index = index
        self.auto_curate = auto_curate
        self.curate_in_background = curate_in_background
        self.expand_query = expand_query
        self.summarize_recall = summarize_recall
        self.recall_k = recall_k
        self.notes_budget = notes_budget
        self.dream_every_days = dream_every_days
        self.notes_refresh_after = notes_refresh_after
        self.model = model
        self.name = name
        self._pinned: dict[str, _Pinned] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        super().__init__()

    def __repr__(self) -> str:
        return f"Memory(root={str(self.root)!r}, index={self.index!r})"

    @property
    def lexical_only(self) -> bool:
        """Whether the archive is the default keyword-only index (``expand_query="auto"``
        expands queries for it alone)."""
        return self._lexical

    def should_expand(self) -> bool:
        return self.lexical_only if self.expand_query == "auto" else bool(self.expand_query)

    def _model_for(self, ctx: RunContext[Any] | None) -> Any:
        if self.model is not None:
            return self.model
        return ctx.agent.model if ctx is not None else None

    # -- Notes in the prompt --------------------------------------------------------------

    def _render(self, facts: list[str]) -> str:
        body = format_facts(facts).rstrip("\n")
        used = len(body)
        share = min(999, round(100 * used / self.notes_budget))
        meter = f"NOTES [{share}% — {used:,}/{self.notes_budget:,} chars]"
        empty = "(empty: save durable facts with `remember`)"
        guide = _GUIDE.format(recall=_RECALL_LINE if self.index is not None else "")
        return f"{guide}\n\n{meter}\n{body or empty}"

    async def _instructions(self, session_id: str | None) -> str:
        now = time.monotonic()
        pinned = self._pinned.get(session_id) if session_id is not None else None
        if (
            pinned is not None
            and pinned.epoch == self.epoch
            and now - pinned.last_end < self.notes_refresh_after
        ):
            return pinned.text
        text = self._render(await self.notes.load())
        if session_id is not None and self.notes_refresh_after > 0:
            self._pinned[session_id] = _Pinned(text, self.epoch, now)
        return text

    def _run_ended(self, session_id: str | None) -> None:
        pinned = self._pinned.get(session_id) if session_id is not None else None
        if pinned is not None:
            pinned.last_end = time.monotonic()

    def unpin(self) -> None:
        self._pinned.clear()

    # -- the plugin -----------------------------------------------------------------------

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        hooks = AgentHooks()
        session_id = ctx.session_id

        @hooks.on(RunCompleted)
        async def completed(event: RunCompleted, run: RunContext[Any]) -> None:
            self._run_ended(session_id)
            if event.result.replayed:
                return  # answered from the store: curated when it first ran
            run_id = event.result.run_id or run.run_id or f"run-{time.time_ns()}"
            job = self._curate(run_id, list(event.result.entries), list(run.entries), run)
            if self.curate_in_background:
                task = asyncio.get_running_loop().create_task(job)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            else:
                await job

        @hooks.on(RunFailed)
        def failed(event: RunFailed, run: RunContext[Any]) -> None:
            self._run_ended(session_id)

        return PluginInstance(
            tools=memory_tools(self, ctx),
            instructions=await self._instructions(session_id),
            hooks=hooks,
        )

    async def drain(self) -> None:
        """Wait for curation still running in the background."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- run-end curation -----------------------------------------------------------------

    async def _curate(
        self, run_id: str, own: list[Any], entries: list[Any], ctx: RunContext[Any]
    ) -> None:
        """Archive the run's messages, digest the conversation into Notes and a summary,
        then dream if one is due: each step on its own, a failure logged and skipped."""
        try:
            if self.index is not None:
                docs = run_docs(run_id, own)
                if docs:
                    await self.index.add(docs)
        except Exception:
            log.warning("memory.ingest: archiving run %s failed", run_id, exc_info=True)
        model = self._model_for(ctx)
        if self.auto_curate and model is not None:
            try:
                await self._digest(run_id, entries, model)
            except Exception:
                log.warning("memory.digest: curating run %s failed", run_id, exc_info=True)
        try:
            await self.dream_if_due(model)
        except Exception:
            log.warning("memory.dream: failed", exc_info=True)

    async def _digest(self, run_id: str, entries: list[Any], model: Any) -> None:
        conversation = curate.conversation_text(entries)
        if not conversation:
            return
        found = await curate.digest(model, await self.notes.load(), conversation)
        await self.apply_digest(found.facts, found.stale)
        if found.summary.strip() and self.index is not None:
            meta = {"run_id": run_id, "kind": "summary"}
            await self.index.add(
                [
                    Doc(
                        id=f"{run_id}:summary",
                        text=found.summary.strip(),
                        when=time.time(),
                        meta=meta,
                    )
                ]
            )


def run_docs(run_id: str, entries: list[Any]) -> list[Doc]:
    """The user's and the assistant's messages of one run as archive documents, with ids
    ``<run_id>:<n>`` (so archiving a run again replaces, never duplicates)."""
    now = time.time()
    meta = {"run_id": run_id, "kind": "message"}
    return [
        Doc(id=f"{run_id}:{n}", text=text, when=now, meta=dict(meta))
        for n, (_, text) in enumerate(curate.messages(entries))
    ]
