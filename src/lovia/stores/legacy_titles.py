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
_TITLE_CHARS = 120


def read_v0_9_119_titles(path: str | Path) -> dict[str, str]:
    """``{chat id: title}`` from 0.9.119's ``chat_sessions`` table in the SQLite file at
    ``path``; empty when the file or the table is not there. Never writes to the file.
    A title is cut to 120 characters (0.9.119's own limit); bytes that are not UTF-8 read
    as U+FFFD."""
    file = Path(path)
    if not file.is_file():
        return {}
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    # a byte that is not UTF-8 costs its own title a character, not every title
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
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
    out: dict[str, str] = {}
    for cid, title in rows:
        if isinstance(title, str) and cid is not None:
            # 0.9.119 kept titles to 120 characters; a longer one was not written by it
            shown = title.replace("\0", "").strip()[:_TITLE_CHARS].strip()
            if shown:
                out[str(cid)] = shown
    return out
