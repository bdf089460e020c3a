"""``ChatStore.search`` (``GET /api/sessions?q=``) goes through a trigram index of titles
and ids, kept in step by every write: it answers what a scan of the titles and ids answers,
after renames and deletes, and for a file written before the index existed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lovia.web import ChatStore

TITLES = {
    "a": "Budget Review 2026",
    "b": "budget review (draft)",
    "c": 'Quote "this" please',
    "d": "100% done_now",
    "e": "Ünïcode Straße notes",
    "f": None,
    "g": "ab",
    "h": "sto red chat  42",  # every trigram the index is asked for, not the phrase
    "i": "Stored Chat 42 notes",
}
QUERIES = [
    "budget", "BUDGET rev", "review (", '"this"', "%", "100%", "_", "done_now", "straße",
    "ünï", "ab", "b", "zzz", "a", " ", "chat-", "chat-d", "e notes",
    "stored chat 42", "chat  4", 'd "this', "0% done_",
]  # fmt: skip


def _scan(path: Path, query: str) -> set[str]:
    """What a scan of the rows answers: ``LIKE`` over title and id, ``%`` and ``_`` as text."""
    pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT id FROM chat_sessions WHERE parent_id IS NULL AND "
            "(title LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\')",
            (pattern, pattern),
        ).fetchall()
    return {r[0] for r in rows}


async def _answers(store: ChatStore, path: Path) -> None:
    for query in QUERIES:
        found = {m.id for m in await store.search(query, limit=1000)}
        assert found == _scan(path, query), query


async def test_search_answers_what_a_scan_answers_through_renames_and_deletes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats.db"
    store = ChatStore.sqlite(path)
    for key, title in TITLES.items():
        await store.upsert(f"chat-{key}", agent="bot", title=title)
    await _answers(store, path)
    assert [m.id for m in await store.search("budget review")] == ["chat-b", "chat-a"]

    await store.set_title("chat-a", "Quarterly plan")
    await store.upsert("chat-a", agent="bot")  # a later message keeps the new title
    await store.delete("chat-b")
    await _answers(store, path)
    assert await store.search("budget") == []
    assert [m.id for m in await store.search("quarterly")] == ["chat-a"]
    assert [m.id for m in await store.search("please")] == ["chat-c"]

    # a trigram a search found rare (" 42") held by many chats since: still all of them
    for i in range(320):
        await store.upsert(f"many-{i:03d}", agent="bot", title=f"many {i} 42 chat")
    await _answers(store, path)


async def test_a_file_written_before_the_index_is_searched_whole(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    store = ChatStore.sqlite(path)
    for key, title in TITLES.items():
        await store.upsert(f"chat-{key}", agent="bot", title=title)
    await store.close()
    with sqlite3.connect(path) as conn:  # as an older lovia left it: no index, no triggers
        conn.execute("DROP TABLE chat_sessions_search")
        for trigger in ("insert", "update", "delete"):
            conn.execute(f"DROP TRIGGER chat_sessions_search_{trigger}")
        conn.execute("INSERT INTO chat_sessions (id, title, created_at, updated_at) "
                     "VALUES ('chat-old', 'budget from before', 1, 1)")  # fmt: skip
    reopened = ChatStore.sqlite(path)
    await _answers(reopened, path)
    assert {m.id for m in await reopened.search("budget")} == {"chat-a", "chat-b", "chat-old"}


@pytest.mark.parametrize("query", ["stored chat 4", "chat 42", "stored chat"])
async def test_search_pages_in_listing_order(tmp_path: Path, query: str) -> None:
    # "stored chat" matches all 400: more than a search reads up front, so it walks the list
    store = ChatStore.sqlite(tmp_path / "chats.db")
    for i in range(400):
        await store.upsert(f"stored-{i:03d}", agent="bot", title=f"stored chat {i}")
    await store.set_pinned("stored-042", True)
    everything = [m.id for m in await store.search(query, limit=1000)]
    assert everything[0] == "stored-042"  # pinned first, then newest first
    listed = await store.list(limit=1000)
    assert everything == [m.id for m in listed if query in (m.title or "")]
    pages = [m.id for o in range(0, 20, 3) for m in await store.search(query, limit=3, offset=o)]
    assert pages == everything[:21]
