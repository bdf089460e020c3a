"""This server's side of the chats' claims: which chats it answers or writes to right now.

One lock discipline for every path that writes to a chat (a run starting, a decision, a
rewind, a delete): the chat is first reserved here, so two requests on this server never
race, then its claim is taken in the stores (``claims.take_claim``), so two servers never
race either. A chat held briefly (an edit) is waited for; a chat with a live run is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator

from .claims import BRIEF_WAIT_S, ChatBusy, take_claim
from .live import LiveRun

__all__ = ["ChatSlots"]


class ChatSlots:
    """The chats this server holds: ``live`` runs, chats ``reserved`` by a request on its
    way to a run or an edit, and the runs a ``begin`` here is about to resume."""

    def __init__(self) -> None:
        self.live: dict[str, LiveRun] = {}
        self.reserved: set[str] = set()
        self.resuming: set[str] = set()  # run ids a begin() here is about to drive
        self._brief: dict[str, asyncio.Event] = {}  # reserved by a brief hold (``brief_hold``)
        # the runs started here, while anything (a stream waiting on a parked one) holds them
        self.runs: weakref.WeakValueDictionary[str, LiveRun] = weakref.WeakValueDictionary()

    def busy(self, chat_id: str) -> bool:
        """Whether this server is answering, or writing to, the chat right now."""
        return chat_id in self.live or chat_id in self.reserved

    def live_run_ids(self) -> set[str]:
        """The runs live here, or about to be resumed here."""
        return {r.run_id for r in self.live.values()} | self.resuming

    @contextlib.asynccontextmanager
    async def reserve(
        self, chat_id: str, busy: str, hint: str, *, resuming: str | None = None
    ) -> AsyncIterator[None]:
        """Reserve ``chat_id`` for the block (after a brief hold here has ended); ``ChatBusy``
        (``busy``, ``hint``) when a run or another request holds it."""
        await self._after_brief(chat_id)
        if self.busy(chat_id):
            raise ChatBusy(f"chat {chat_id!r} {busy}", hint=hint)
        self.reserved.add(chat_id)
        if resuming is not None:
            self.resuming.add(resuming)
        try:
            yield
        finally:
            self.reserved.discard(chat_id)
            if resuming is not None:
                self.resuming.discard(resuming)

    @contextlib.asynccontextmanager
    async def brief_hold(self, chat_id: str, store: object, ttl: float) -> AsyncIterator[None]:
        """Hold the chat here and its claim in ``store`` for a short edit, which other
        requests for the chat wait for instead of being refused."""
        async with self.reserve(chat_id, "has a live run", "stop it first"):
            done = self._brief[chat_id] = asyncio.Event()
            try:
                claim = await take_claim(store, chat_id, ttl=ttl, brief=True)
                try:
                    yield
                finally:
                    await claim.release()
            finally:
                del self._brief[chat_id]
                done.set()

    async def _after_brief(self, chat_id: str) -> None:
        """Wait (up to ``BRIEF_WAIT_S``) while this server holds ``chat_id`` briefly."""
        deadline = time.monotonic() + BRIEF_WAIT_S
        while (done := self._brief.get(chat_id)) is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return  # the caller then finds the chat reserved and refuses
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), left)

    def enter(self, run: LiveRun, resumes: str | None) -> None:
        """``run`` is live on its chat (a parked run it ``resumes`` hands its streams on)."""
        parked = self.runs.get(resumes) if resumes is not None else None
        if parked is not None:
            parked.resumed_by = run  # its streams go on with this run, however quick
        self.runs[run.run_id] = run
        self.live[run.chat_id] = run

    def leave(self, run: LiveRun) -> None:
        """``run`` is no longer its chat's live run (if it still was)."""
        if self.live.get(run.chat_id) is run:
            del self.live[run.chat_id]

    async def started(self, chat_id: str) -> LiveRun | None:
        """The chat's live run, once a run starting here has started."""
        run = self.live.get(chat_id)
        while run is None and chat_id in self.reserved:
            await asyncio.sleep(0.01)
            run = self.live.get(chat_id)
        return run
