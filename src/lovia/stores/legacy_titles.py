"""Chat titles from a database lovia 0.9.119's web server wrote, read without writing.

0.9.119 kept each chat's title (generated or renamed) in a ``chat_sessions`` table of its own,
beside the transcripts the session store migrates. The web app shows those titles; the SQL
stays here, with the other SQLite code.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

__all__ = ["read_v0_9_119_titles"]

log = logging.getLogger("lovia.web")


def read_v0_9_119_titles(path: str | Path) -> dict[str, str]:
    """``{chat id: title}`` from 0.9.119's ``chat_sessions`` table in the SQLite file at
    ``path``; empty when the file or the table is not there. Never writes to the file."""
    file = Path(path)
    if not file.is_file():
        return {}
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    try:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chat_sessions'"
        ).fetchone()
        if found is None:
            return {}
        rows = conn.execute("SELECT id, title FROM chat_sessions").fetchall()
    except sqlite3.Error as exc:  # a file that is not what it seems: no titles, no failure
        log.warning("could not read lovia 0.9.119's chat titles from %s: %s", file, exc)
        return {}
    finally:
        conn.close()
    return {
        str(cid): title.strip()
        for cid, title in rows
        if isinstance(title, str) and title.strip() and cid is not None
    }
