"""``StoreBook``: the supervisor's view of the chats, kept in step with the chat tables
(deleting a chat deletes its row, the chats it owns and their schedules too)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..chats.book import ChatBook

if TYPE_CHECKING:
    from .store import ChatStore

__all__ = ["StoreBook"]


class StoreBook(ChatBook):
    """A ``ChatBook`` over a ``ChatStore``'s session store and checkpointer."""

    def __init__(self, store: ChatStore) -> None:
        super().__init__(store.session, store.checkpointer)
        self.store = store

    async def delete(self, chat_id: str) -> list[str]:
        """``ChatStore.delete``: the chat, the chats it owns, their runs and side runs."""
        run_ids = list(await self.store.delete(chat_id))
        self._seen.pop(chat_id, None)
        return run_ids
