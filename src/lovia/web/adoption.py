"""Which sessions the chat list may not know yet, found from the session store's newest rows.

Adopting the sessions a program or another server wrote (``ChatStore.adopt_sessions``) used
to read every stored session on each listing. A session store that marks its rows
(``MarksSessions``) is now asked only for the rows above the highest one the last look saw,
less ``WINDOW`` row numbers: PostgreSQL numbers a row when it is written, not when it
commits, so a row may turn up after a higher one did. A look reads at most ``LIMIT`` rows
(the newest). One that finds a row it saw in that window gone or changed (a chat was
deleted or rewound; SQLite may give a freed number to a new row), or ``LIMIT`` rows (more
may have been written), reads every session once again, as do the first look and a store
without marks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ..stores.capabilities import ListsSessions, MarksSessions, has_capability
from ..stores.chat_tables import SQLiteChatTables
from ..stores.session_protocol import Session

__all__ = ["LIMIT", "WINDOW", "SessionWatch", "adopt_all"]

WINDOW = 256
"""Row numbers below the highest seen that each look reads again."""
LIMIT = 4 * WINDOW
"""The most rows one look reads (the newest)."""

Mark = tuple[int, str, str]


class SessionWatch:
    """The rows of one session store the last look saw (its newest ``WINDOW`` numbers)."""

    def __init__(self) -> None:
        self._top = 0
        self._seen: frozenset[Mark] | None = None

    def reset(self) -> None:
        """Forget what was seen: the next look reads every session."""
        self._seen = None

    async def look(self, session: Session) -> set[str] | None:
        """Ids of the sessions with rows the last look did not see; ``None``: something
        may have been missed, read every session."""
        if not has_capability(session, MarksSessions):
            return None
        marks = await cast("MarksSessions", session).session_marks(
            max(0, self._top - WINDOW), LIMIT
        )
        # no row above the window: the highest may be anywhere below it (a delete emptied
        # the top), so the next look starts from the newest rows again
        seen, top = self._seen, (marks[-1][0] if marks else 0)
        self._top = top
        self._seen = frozenset(m for m in marks if m[0] > top - WINDOW)
        now = set(marks)
        if seen is None or len(marks) >= LIMIT or not seen <= now:
            return None
        return {m[1] for m in now - seen}


async def adopt_all(
    session: Session, tables: SQLiteChatTables, title: Callable[[str | None], str | None]
) -> int:
    """A chat row (titled by ``title`` of the session's title) for each session of a
    ``ListsSessions`` store that has none; how many rows were made."""
    infos = await cast("ListsSessions", session).list_sessions()
    known = await tables.get_many([i.session_id for i in infos])
    made = 0
    for info in infos:
        if info.session_id not in known:
            await tables.upsert(
                info.session_id,
                agent=None,
                title=title(info.title),
                parent_id=None,
                spawned_from=None,
                now=info.updated_at,
            )
            made += 1
    return made
