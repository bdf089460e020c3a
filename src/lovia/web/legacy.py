"""Chat titles from a database lovia 0.9.119's web server wrote.

0.9.119 kept each chat's title (generated or renamed) in a ``chat_sessions`` table of its
own, beside the transcripts. Its transcripts and checkpoints are migrated by the stores, which
also read those titles (read-only); this book shows them, so the chat list has the names the
user knew.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..chats.book import ChatBook
from ..stores.checkpoint import RunInfo
from ..stores.legacy_titles import read_v0_9_119_titles

__all__ = ["TitledBook"]

log = logging.getLogger("lovia.web")


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
