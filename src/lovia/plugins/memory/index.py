"""The archive's retrieval: ``Doc`` and ``Hit``, the ``Index`` protocol, ``KeywordIndex`` (SQLite
full-text search, bm25) and ``HybridIndex``, which fuses several indexes by reciprocal rank."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ...errors import UserValueError

__all__ = ["Doc", "Fusable", "Hit", "HybridIndex", "Index", "KeywordIndex", "search_terms"]

log = logging.getLogger("lovia.plugins.memory")


@dataclass
class Doc:
    """One archived text: a stable ``id`` (adding the same id again replaces it), the
    ``text``, when it was written (``when``, seconds since the epoch) and string ``meta``."""

    id: str
    text: str
    when: float = 0.0
    meta: dict[str, str] = field(default_factory=dict)


@dataclass
class Hit:
    """A search result: the document and its score (higher is better)."""

    doc: Doc
    score: float


@runtime_checkable
class Index(Protocol):
    """A searchable archive: ``add`` (an upsert by ``Doc.id``), ``remove`` and ``search``.
    It is shared by every run of every agent using it, so it must be safe to call
    concurrently."""

    async def add(self, docs: list[Doc]) -> None: ...

    async def remove(self, ids: list[str]) -> None: ...

    async def search(self, query: str, k: int = 5) -> list[Hit]: ...


class Fusable:
    """Mix this in and ``a | b`` builds a ``HybridIndex`` of both (flattening hybrids)."""

    def __or__(self, other: Index) -> HybridIndex:
        arms: list[Index] = []
        for side in (self, other):
            if isinstance(side, HybridIndex):
                arms.extend(side.indexes)
            else:
                arms.append(side)  # type: ignore[arg-type]
        rrf_k = self.rrf_k if isinstance(self, HybridIndex) else 60  # the left one's tuning
        return HybridIndex(arms, rrf_k=rrf_k)


class HybridIndex(Fusable):
    """Several indexes as one: writes go to every arm; a search asks each arm and fuses the
    rankings by reciprocal rank (``1 / (rrf_k + rank)`` summed per document). An arm that
    fails is logged and left out, so one broken backend does not break recall."""

    def __init__(self, indexes: Sequence[Index], *, rrf_k: int = 60) -> None:
        if not indexes:
            raise UserValueError("HybridIndex needs at least one index")
        self.indexes = list(indexes)
        self.rrf_k = rrf_k

    def __repr__(self) -> str:
        return f"HybridIndex({self.indexes!r})"

    async def add(self, docs: list[Doc]) -> None:
        """Write to every arm; an arm's failure is raised once all have been written to (an
        add is an upsert, so trying again is safe)."""
        await self._each(lambda arm: arm.add(docs))

    async def remove(self, ids: list[str]) -> None:
        await self._each(lambda arm: arm.remove(ids))

    async def _each(self, write: Callable[[Index], Awaitable[None]]) -> None:
        failure: Exception | None = None
        for arm in self.indexes:
            try:
                await write(arm)
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    async def search(self, query: str, k: int = 5) -> list[Hit]:
        """The arms' rankings fused; an arm that fails is left out (with a warning), unless
        every arm fails, which raises the first failure."""
        failures: list[Exception] = []

        async def ask(arm: Index) -> list[Hit]:
            try:
                return await arm.search(query, k)
            except Exception as exc:
                failures.append(exc)
                log.warning("memory.search: %r failed to search; left out", arm, exc_info=True)
                return []

        rankings = await asyncio.gather(*(ask(arm) for arm in self.indexes))
        if len(failures) == len(self.indexes):
            raise failures[0]
        scores: dict[str, float] = {}
        docs: dict[str, Doc] = {}
        for ranking in rankings:
            for rank, hit in enumerate(ranking, start=1):
                scores[hit.doc.id] = scores.get(hit.doc.id, 0.0) + 1.0 / (self.rrf_k + rank)
                docs.setdefault(hit.doc.id, hit.doc)
        best = sorted(scores, key=lambda i: scores[i], reverse=True)[:k]
        return [Hit(doc=docs[i], score=scores[i]) for i in best]


# -- terms --------------------------------------------------------------------------------

# Chinese, Japanese and Korean scripts have no spaces between words: their runs are indexed
# as overlapping pairs of characters, which finds words without a dictionary.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_PIECES = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")


def search_terms(text: str) -> list[str]:
    """The terms ``text`` is indexed and searched by: lower-case words, and each run of CJK
    characters as its overlapping two-character pairs."""
    terms: list[str] = []
    for piece in _PIECES.findall(text.lower()):
        if _IS_CJK.match(piece) and len(piece) > 1:
            terms.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        else:
            terms.append(piece)
    return terms


# -- the keyword index --------------------------------------------------------------------


def _doc(row: tuple[str, str, float, str]) -> Doc:
    doc_id, text, when, meta = row
    return Doc(id=doc_id, text=text, when=when, meta=json.loads(meta) if meta else {})


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class KeywordIndex(Fusable):
    """The default archive: one SQLite file, searched with full-text bm25 ranking (any query
    term may match; documents with more, rarer terms rank first). Where SQLite has no
    full-text search, it falls back to counting matching terms."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from ...stores.memory_archive import KeywordTable  # SQL lives with the stores

        self.path = path
        self.table = KeywordTable(path)

    def __repr__(self) -> str:
        return f"KeywordIndex({str(self.path)!r})"

    async def add(self, docs: list[Doc]) -> None:
        if docs:
            await self.table.upsert(
                [
                    (
                        d.id,
                        d.text,
                        " ".join(search_terms(d.text)),
                        d.when,
                        json.dumps(d.meta, ensure_ascii=False),
                    )
                    for d in docs
                ]
            )

    async def remove(self, ids: list[str]) -> None:
        if ids:
            await self.table.remove(ids)

    async def search(self, query: str, k: int = 5) -> list[Hit]:
        terms = list(dict.fromkeys(search_terms(query)))
        if not terms or k < 1:
            return []
        if self.table.fts:
            found = await self.table.match(" OR ".join(_quoted(t) for t in terms), k)
            # bm25 is negative, better when lower: map it into (0, 1), higher better
            return [Hit(doc=_doc(row), score=-rank / (1.0 - rank)) for row, rank in found]
        hits = []
        for row in await self.table.all_rows():
            words = set(search_terms(row[1]))
            matched = sum(t in words for t in terms)
            if matched:
                hits.append(Hit(doc=_doc(row), score=matched / len(terms)))
        hits.sort(key=lambda h: (-h.score, -h.doc.when))
        return hits[:k]
