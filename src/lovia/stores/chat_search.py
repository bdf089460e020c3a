"""Chat search by title or id (``GET /api/sessions?q=``) through an index, not a scan.

``chat_sessions_search`` is an FTS5 table with the trigram tokenizer over ``chat_sessions``'
``title`` and ``id`` (external content: it stores the trigrams, not the text), kept in step
by triggers on every insert, rename and delete, whoever writes the file. It narrows a search
to the rows holding every trigram of the query; the ``LIKE`` that follows keeps the answer
exactly what a scan gives (the index folds case more widely than ``LIKE``, never less).
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

__all__ = ["ensure_search_index", "search_where"]

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


def search_where(
    conn: sqlite3.Connection, query: str, like: str, indexed: bool
) -> tuple[str, tuple[str, ...]]:
    """The ``WHERE`` part of a search for ``query`` among the top-level chats (``like``: its
    escaped ``LIKE`` pattern) and its parameters."""
    if not indexed or len(query) < 3:
        return f"parent_id IS NULL AND {_LIKE}", (like, like)
    phrase = '"' + query.replace('"', '""') + '"'
    match = f"SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH ?"
    rowids = [r[0] for r in conn.execute(f"{match} LIMIT ?", (phrase, FEW + 1))]
    if len(rowids) <= FEW:  # "+": not the listing index, so SQLite reads just these rows
        few = "rowid IN (SELECT value FROM json_each(?))"
        return f"+parent_id IS NULL AND {few} AND {_LIKE}", (json.dumps(rowids), like, like)
    return f"parent_id IS NULL AND rowid IN ({match}) AND {_LIKE}", (phrase, like, like)
