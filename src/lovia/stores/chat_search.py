"""Chat search by title or id (``GET /api/sessions?q=``) through an index, not a scan.

``chat_sessions_search`` is an FTS5 table with the trigram tokenizer over ``chat_sessions``'
``title`` and ``id`` (external content: it stores the trigrams, not the text), kept in step
by triggers on every insert, rename and delete, whoever writes the file. It narrows a search
to the rows holding some of the query's trigrams; the ``LIKE`` that follows keeps the answer
exactly what a scan gives (the index folds case more widely than ``LIKE``, never less).
Each trigram asked for costs a read of the chats holding it (all 10,000 for a common one
such as ``"cha"``), so a search asks for the rarest of every third of its trigrams
(``SearchIndex``), and the ``LIKE`` drops what the others would have: at 10,000 chats a
search for "stored chat 42" took 0.51 ms with its twelve trigrams, 0.04 ms with " 42".
A file without the table gets it, filled from its rows, the first time it is opened; an
SQLite without the trigram tokenizer (before 3.34) keeps scanning, and says so in the log.
Queries under three characters have no trigram and scan too.

A search whose trigrams hold at most ``FEW`` chats reads those rows by rowid and sorts them;
one holding more walks the chats in list order, which stops at the page's end. Left to
itself SQLite walks every time (2.2 ms for 111 matches among 10,000 chats; read: 0.8 ms).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time

__all__ = ["SearchIndex", "cover", "ensure_search_index", "search_where"]

log = logging.getLogger("lovia.stores")

SEARCH_TABLE = "chat_sessions_search"
_CREATE = (
    f"CREATE VIRTUAL TABLE {SEARCH_TABLE} USING fts5(title, id, content='chat_sessions', "
    "content_rowid='rowid', tokenize='trigram')"
)
_FORGET = f"INSERT INTO {SEARCH_TABLE} ({SEARCH_TABLE}, rowid, title, id) "
_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS {SEARCH_TABLE}_insert AFTER INSERT ON chat_sessions BEGIN "
    f"INSERT INTO {SEARCH_TABLE} (rowid, title, id) VALUES (new.rowid, new.title, new.id); END",
    f"CREATE TRIGGER IF NOT EXISTS {SEARCH_TABLE}_delete AFTER DELETE ON chat_sessions BEGIN "
    f"{_FORGET}VALUES ('delete', old.rowid, old.title, old.id); END",
    f"CREATE TRIGGER IF NOT EXISTS {SEARCH_TABLE}_update AFTER UPDATE OF title, id "
    f"ON chat_sessions BEGIN {_FORGET}VALUES ('delete', old.rowid, old.title, old.id); "
    f"INSERT INTO {SEARCH_TABLE} (rowid, title, id) VALUES (new.rowid, new.title, new.id); END",
)
FEW = 300  # rowids read up front: past it the walk wins, and the read costs more
_LIKE = "(title LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\')"
_MATCH = f"SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH ?"
_COUNT = f"SELECT count(*) FROM ({_MATCH} LIMIT ?)"
COUNT_TTL = 60.0  # seconds a trigram's count steers searches
MAX_COUNTS = 4096  # trigrams counted, at most (then all are forgotten)


def ensure_search_index(conn: sqlite3.Connection) -> bool:
    """Make the index and its triggers if the file lacks them (inside the caller's
    transaction, so servers opening one file at once make them once); ``False`` when this
    SQLite cannot, and searches scan."""
    try:  # a search's few matches travel as a JSON array
        conn.execute("SELECT value FROM json_each('[1]')").fetchall()
    except sqlite3.OperationalError as exc:
        log.info(
            "SQLite %s has no JSON functions (%s): chat searches scan the titles",
            sqlite3.sqlite_version,
            exc,
        )
        return False
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SEARCH_TABLE,)
    ).fetchone()
    if found is None:
        try:
            conn.execute(_CREATE)
        except sqlite3.OperationalError as exc:
            log.info(
                "SQLite %s has no FTS5 trigram tokenizer (%s): chat searches scan the titles",
                sqlite3.sqlite_version,
                exc,
            )
            return False
        conn.execute(f"INSERT INTO {SEARCH_TABLE} ({SEARCH_TABLE}) VALUES ('rebuild')")
    for statement in _TRIGGERS:
        conn.execute(statement)
    return True


class SearchIndex:
    """A file's trigram index as its searches ask it: for the rarest of a query's trigrams.

    How many chats hold each trigram is counted (up to ``FEW + 1``) the first time a search
    has it and again after ``COUNT_TTL`` seconds; a count steers which trigram is asked
    for, never what is found (the index answers for now, and the ``LIKE`` decides)."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, float]] = {}

    def match(self, conn: sqlite3.Connection, query: str) -> str:
        """The index query for ``query`` (three characters or more): its rarest trigram
        among ``cover``'s, when at most ``FEW`` chats hold it; else all of those."""
        now = time.monotonic()
        if len(self._counts) > MAX_COUNTS:
            self._counts.clear()
        terms = cover(query)
        best, fewest = "", FEW + 1
        for term in terms:
            seen = self._counts.get(term)
            if seen is None or now - seen[1] > COUNT_TTL:
                seen = (conn.execute(_COUNT, (term, FEW + 1)).fetchone()[0], now)
                self._counts[term] = seen
            if seen[0] < fewest:
                best, fewest = term, seen[0]
        return best or " AND ".join(terms)


def search_where(
    conn: sqlite3.Connection, query: str, like: str, index: SearchIndex | None
) -> tuple[str, tuple[str, ...]]:
    """The ``WHERE`` part of a search for ``query`` among the top-level chats (``like``: its
    escaped ``LIKE`` pattern) and its parameters; ``index`` is ``None`` for a file that
    cannot have one."""
    if index is None or len(query) < 3:
        return f"parent_id IS NULL AND {_LIKE}", (like, like)
    terms = index.match(conn, query)
    rowids = [r[0] for r in conn.execute(f"{_MATCH} LIMIT ?", (terms, FEW + 1))]
    if len(rowids) <= FEW:  # "+": not the listing index, so SQLite reads just these rows
        few = "rowid IN (SELECT value FROM json_each(?))"
        return f"+parent_id IS NULL AND {few} AND {_LIKE}", (json.dumps(rowids), like, like)
    return f"parent_id IS NULL AND rowid IN ({_MATCH}) AND {_LIKE}", (terms, like, like)


def cover(query: str) -> list[str]:
    """``query``'s trigrams as index phrases: every third and the last, which between
    them hold each of its characters."""
    last = len(query) - 3
    return ['"' + query[i : i + 3].replace('"', '""') + '"' for i in [*range(0, last, 3), last]]
