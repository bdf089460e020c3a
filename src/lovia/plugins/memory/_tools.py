"""The model's memory tools: ``remember``, ``forget`` and ``recall``."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

from ...run_context import RunContext
from ...tools import Tool, tool
from . import curate
from .index import Hit, Index

__all__ = ["MemoryForTools", "hit_line", "memory_tools"]

log = logging.getLogger("lovia.plugins.memory")


class MemoryForTools(Protocol):
    """What the tools use of their ``Memory``: the Notes verbs, the archive and how recall
    reads it. The plugin hands itself over; this module needs nothing else of it."""

    index: Index | None
    recall_k: int
    summarize_recall: bool

    async def remember(self, fact: str) -> bool: ...

    async def forget(self, fact: str) -> bool: ...

    def should_expand(self) -> bool: ...

    def _model_for(self, ctx: RunContext[Any] | None) -> Any: ...


def hit_line(hit: Hit) -> str:
    """One hit as ``- [YYYY-MM-DD] text`` (the date left out when unknown)."""
    text = " ".join(hit.doc.text.split())
    if hit.doc.when > 0:
        day = time.strftime("%Y-%m-%d", time.localtime(hit.doc.when))
        return f"- [{day}] {text}"
    return f"- {text}"


async def _search(memory: MemoryForTools, ctx: RunContext[Any], query: str) -> list[Hit]:
    assert memory.index is not None
    queries = [query]
    model = memory._model_for(ctx)
    if memory.should_expand() and model is not None:
        try:
            queries += [q for q in await curate.expand(model, query) if q != query]
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("memory.expand: query expansion failed; searching as asked", exc_info=True)
    best: dict[str, Hit] = {}
    for one in queries:
        for hit in await memory.index.search(one, memory.recall_k):
            if hit.doc.id not in best or hit.score > best[hit.doc.id].score:
                best[hit.doc.id] = hit
    ranked = sorted(best.values(), key=lambda h: h.score, reverse=True)
    return ranked[: memory.recall_k]


def memory_tools(memory: MemoryForTools, setup_ctx: RunContext[Any]) -> list[Tool]:
    async def remember(fact: str) -> str:
        """Save a durable fact about the user for future conversations: a preference, a
        correction or a lasting detail, as one short self-contained line."""
        if not fact.strip():
            return "Nothing to remember: the fact is empty."
        added = await memory.remember(fact)
        return "Remembered for future conversations." if added else "Already in your notes."

    async def forget(fact: str) -> str:
        """Remove a note that is wrong or no longer true (its text, or a distinctive part
        of it)."""
        removed = await memory.forget(fact)
        return "Forgotten." if removed else f"No single note matches {fact!r}; nothing removed."

    async def recall(ctx: RunContext[Any], query: str) -> str:
        """Search past conversations for what the user or you said about something."""
        hits = await _search(memory, ctx, query)
        if not hits:
            return f"Nothing found in past conversations for {query!r}."
        lines = [hit_line(h) for h in hits]
        model = memory._model_for(ctx)
        if memory.summarize_recall and model is not None:
            try:
                return await curate.summarize(model, query, hits, lines)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("memory.summarize: failed; returning the excerpts", exc_info=True)
        return "Found in past conversations:\n" + "\n".join(lines)

    tools = [tool(remember), tool(forget)]
    if memory.index is not None:
        tools.append(tool(recall))
    return tools
