"""The SQLite files behind the Memory plugin's archive: ``archive.db`` (``KeywordTable``, a
full-text table) and ``vectors.db`` (``VectorTable``). Each call opens the file in a worker
thread, so several processes can share it (SQLite locks the file; a writer waits up to
``BUSY_SECONDS``). Rows go in and out as plain tuples; the plugin turns them into documents.

The tables are 0.9.119's, so a memory folder it wrote is read and extended here as it is.
Their version lives in the ``lovia_schema`` table, as in 0.9.119: no row is version 0, the
only one there is; a file that records a later version was written by a newer lovia and is
refused rather than misread.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import StoreError

__all__ = ["KeywordTable", "SQLiteFile", "VectorTable", "fts5_available"]

T = TypeVar("T")
BUSY_SECONDS = 10.0

_VERSIONS = (
    "CREATE TABLE IF NOT EXISTS lovia_schema (\n"
    "    store TEXT PRIMARY KEY,\n    version INTEGER NOT NULL\n)"
)


class SQLiteFile:
    """``await db.run(fn)`` calls ``fn(connection)`` in a thread, inside one transaction."""

    def __init__(self, path: str | os.PathLike[str], schema: list[str], *, store: str) -> None:
        self.path = Path(path)
        self._schema = schema
        self._store = store
        self._ready = False
        self._lock = asyncio.Lock()  # one transaction at a time from this process
        # ":memory:" is a private database: one connection holds it for the index's life
        self._shared: sqlite3.Connection | None = None
        if str(path) == ":memory:":
            self._shared = sqlite3.connect(
                ":memory:", check_same_thread=False, isolation_level=None
            )
            self._shared.row_factory = sqlite3.Row

    def _connect(self) -> sqlite3.Connection:
        if self._shared is not None:
            return self._shared
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the memory index {self.path}: {exc}",
                hint="check that the memory folder exists and is writable",
            ) from exc
        conn.row_factory = sqlite3.Row
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_VERSIONS)
            row = conn.execute(
                "SELECT version FROM lovia_schema WHERE store = ?", (self._store,)
            ).fetchone()
            if row is not None and int(row[0]) > 0:
                raise StoreError(
                    f"{self.path}: the {self._store!r} tables are at version {row[0]}, "
                    "newer than this lovia reads (0)",
                    hint="a newer lovia wrote this file: upgrade lovia to open it",
                )
            for statement in self._schema:
                conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _call(self, fn: Callable[[sqlite3.Connection], T], write: bool) -> T:
        conn = self._connect()
        try:
            if not self._ready:
                self._prepare(conn)
                self._ready = True
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                out = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return out
        except sqlite3.Error as exc:
            raise StoreError(f"memory index {self.path}: {exc}") from exc
        finally:
            if conn is not self._shared:
                conn.close()

    async def run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool = True) -> T:
        async with self._lock:
            return await asyncio.to_thread(self._call, fn, write)


def fts5_available() -> bool:
    """Whether this Python's SQLite can build full-text tables."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


Row = tuple[str, str, float, str]
"""``(id, text, when, meta as JSON)``."""

_FTS = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(\n"
    "    id UNINDEXED,\n    text UNINDEXED,\n    search,\n    when_ts UNINDEXED,\n"
    "    meta UNINDEXED\n)"
]
_PLAIN = [
    "CREATE TABLE IF NOT EXISTS memory_docs (\n    id TEXT PRIMARY KEY,\n"
    "    text TEXT NOT NULL,\n    when_ts REAL NOT NULL,\n    meta TEXT NOT NULL\n)"
]


class KeywordTable:
    """``archive.db``: a full-text table (``memory_fts``: the text, and the ``search`` terms
    the index matches), or a plain one (``memory_docs``) where SQLite has no full-text
    search."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.fts = fts5_available()
        self.db = SQLiteFile(path, _FTS if self.fts else _PLAIN, store="keyword_index")

    async def upsert(self, rows: list[tuple[str, str, str, float, str]]) -> None:
        """Rows of ``(id, text, search terms, when, meta)``; an id already there is replaced."""
        fts = self.fts

        def write(conn: sqlite3.Connection) -> None:
            for doc_id, text, search, when, meta in rows:
                if fts:
                    conn.execute("DELETE FROM memory_fts WHERE id = ?", (doc_id,))
                    conn.execute(
                        "INSERT INTO memory_fts (id, text, search, when_ts, meta) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (doc_id, text, search, when, meta),
                    )
                else:
                    conn.execute(
                        "INSERT OR REPLACE INTO memory_docs (id, text, when_ts, meta) "
                        "VALUES (?, ?, ?, ?)",
                        (doc_id, text, when, meta),
                    )

        await self.db.run(write)

    async def remove(self, ids: list[str]) -> None:
        table = "memory_fts" if self.fts else "memory_docs"
        await self.db.run(
            lambda conn: conn.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids])
        )

    async def match(self, expression: str, k: int) -> list[tuple[Row, float]]:
        """The ``k`` best rows for an FTS5 ``expression``, each with its bm25 rank (lower is
        better)."""

        def ranked(conn: sqlite3.Connection) -> list[tuple[Row, float]]:
            rows = conn.execute(
                "SELECT id, text, when_ts, meta, bm25(memory_fts) AS rank FROM memory_fts "
                "WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?",
                (expression, k),
            ).fetchall()
            return [(_row(r), float(r["rank"])) for r in rows]

        return await self.db.run(ranked, write=False)

    async def all_rows(self) -> list[Row]:
        """Every row (the plain table's search reads them all)."""
        return await self.db.run(
            lambda conn: [
                _row(r) for r in conn.execute("SELECT id, text, when_ts, meta FROM memory_docs")
            ],
            write=False,
        )


def _row(r: sqlite3.Row) -> Row:
    return (str(r["id"]), str(r["text"]), float(r["when_ts"] or 0.0), str(r["meta"] or ""))


_VECTORS = [
    "CREATE TABLE IF NOT EXISTS memory_vectors (\n    id TEXT PRIMARY KEY,\n"
    "    text TEXT NOT NULL,\n    when_ts REAL NOT NULL,\n    meta TEXT NOT NULL,\n"
    "    vec BLOB NOT NULL\n)",
    "CREATE TABLE IF NOT EXISTS memory_vectors_meta (\n    key TEXT PRIMARY KEY,\n"
    "    value TEXT NOT NULL\n)",
]


def _space(conn: sqlite3.Connection) -> str | None:
    found = conn.execute(
        "SELECT value FROM memory_vectors_meta WHERE key = 'embedder_id'"
    ).fetchone()
    return str(found[0]) if found is not None else None


class VectorTable:
    """``vectors.db``: each document's vector (float32 bytes), and the id of the embedder
    that made them (``memory_vectors_meta``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.db = SQLiteFile(path, _VECTORS, store="vector_index")

    async def upsert(self, space: str, rows: list[tuple[str, str, float, str, bytes]]) -> None:
        """Rows of ``(id, text, when, meta, vector)`` made by the embedder ``space``; vectors
        of another embedder are dropped first."""

        def write(conn: sqlite3.Connection) -> None:
            if _space(conn) != space:
                conn.execute("DELETE FROM memory_vectors")
                conn.execute(
                    "INSERT OR REPLACE INTO memory_vectors_meta (key, value) "
                    "VALUES ('embedder_id', ?)",
                    (space,),
                )
            conn.executemany(
                "INSERT OR REPLACE INTO memory_vectors (id, text, when_ts, meta, vec) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )

        await self.db.run(write)

    async def remove(self, ids: list[str]) -> None:
        await self.db.run(
            lambda conn: conn.executemany(
                "DELETE FROM memory_vectors WHERE id = ?", [(i,) for i in ids]
            )
        )

    async def count(self, space: str) -> int:
        """How many vectors of the embedder ``space`` are stored."""

        def counted(conn: sqlite3.Connection) -> int:
            if _space(conn) != space:
                return 0
            return int(conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0])

        return await self.db.run(counted, write=False)

    async def rows(self, space: str) -> list[tuple[Row, bytes]]:
        """Every stored row with its vector, if they were made by ``space``."""

        def read(conn: sqlite3.Connection) -> list[tuple[Row, bytes]]:
            if _space(conn) != space:
                return []
            return [
                (_row(r), bytes(r["vec"]))
                for r in conn.execute("SELECT id, text, when_ts, meta, vec FROM memory_vectors")
            ]

        return await self.db.run(read, write=False)
