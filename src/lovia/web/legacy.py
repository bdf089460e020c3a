"""Chat titles from a database lovia 0.9.119's web server wrote.

0.9.119 kept each chat's title (generated or renamed) in a ``chat_sessions`` table of its
own, beside the transcripts. Its transcripts and checkpoints are migrated by the stores; the
titles are only read here, read-only, so the chat list shows the names the user knew.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path
from typing import Any

from ..chats.book import ChatBook
from ..stores.checkpoint import RunInfo

__all__ = ["TitledBook", "read_v0_9_119_titles"]

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


class TitledBook(ChatBook):
    """A ``ChatBook`` that names chats by the titles 0.9.119 gave them, where it did."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.legacy_titles: dict[str, str] = {}  # filled at startup (``load_titles``)

    async def load_titles(self) -> int:
        """Read 0.9.119's titles from the session store's SQLite file, if it has one;
        returns how many chats have one."""
        path = getattr(self.session, "path", None)
        if isinstance(path, str) and path != ":memory:":
            self.legacy_titles = await asyncio.to_thread(read_v0_9_119_titles, path)
        if self.legacy_titles:
            log.info(
                "%d chat title(s) read from lovia 0.9.119's chat list", len(self.legacy_titles)
            )
        return len(self.legacy_titles)

    async def summaries(self, pending: list[RunInfo] | None = None) -> list[dict[str, Any]]:
        out = await super().summaries(pending)
        if self.legacy_titles:
            for chat in out:
                title = self.legacy_titles.get(chat["id"])
                if title:
                    chat["title"] = title
        return out
