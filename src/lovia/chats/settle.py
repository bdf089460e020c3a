"""Settling: what a run that will not go on leaves in its chat.

A stopped, failed or abandoned run is written to the session as a completed segment: its
dangling tool calls removed (a parked call answered with its refusal), the text the model
was streaming kept, messages that joined it too late appended, and ``{"ended": ...}`` as the
segment's meta (the page marks such an answer). Then its checkpoint is deleted. The caller
holds the run's lease (``claims.hold_run``), so nobody drives the run meanwhile.

``ChatSettler`` does this for a server's chats (stop, settle, delete): the base of the
``RunSupervisor``, sharing its ``ChatSlots``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from .. import approvals
from ..errors import UserError
from ..session import TIMING_META_KEY
from ..stores.checkpoint import RunSnapshot
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolResultEntry,
    TranscriptEntry,
    dangling_tool_calls,
    drop_dangling_tool_calls,
)
from .book import ChatBook
from .claims import BRIEF_WAIT_S, busy_elsewhere, hold_run
from .live import LiveRun
from .slots import ChatSlots

__all__ = ["ChatSettler", "has_user_message", "settle_run"]

log = logging.getLogger("lovia.web")


def has_user_message(entries: list[TranscriptEntry]) -> bool:
    """Whether ``entries`` hold the user's message (a run's checkpoint has it once it began)."""
    return any(isinstance(e, InputEntry) and e.role == "user" for e in entries)


async def settle_run(
    chats: ChatBook,
    chat_id: str,
    run_id: str,
    partial_text: str,
    input_text: str | None,
    *,
    ended: str,
    error: dict[str, Any] | None = None,
    late: list[Any] | None = None,
) -> list[TranscriptEntry]:
    """Write run ``run_id`` to chat ``chat_id`` as a completed segment and delete its
    checkpoint; the entries written (none when the run said nothing)."""
    cp = chats.checkpointer
    snapshot = await cp.load(run_id)
    entries: list[TranscriptEntry] = list(snapshot.entries) if snapshot is not None else []
    if input_text and not has_user_message(entries):
        # the run ended before its checkpoint held the message: the message is kept
        entries.insert(0, InputEntry(role="user", content=input_text))
    if snapshot is not None and snapshot.pending_approvals:
        entries = await _refuse_parked(chats, snapshot, entries, ended)
    entries = drop_dangling_tool_calls(entries)
    if partial_text.strip():
        entries.append(AssistantTextEntry(content=partial_text))
    # messages sent while it ran that it never saw: kept after it, in order
    entries.extend(InputEntry(role="user", content=content) for content in late or ())
    if entries:
        meta: dict[str, Any] = {"ended": ended}
        if snapshot is not None and snapshot.started_at is not None:  # timed as a finished run
            meta[TIMING_META_KEY] = {"started_at": snapshot.started_at, "finished_at": time.time()}
        if snapshot is not None and snapshot.error and ended != "stopped":
            meta["error"] = snapshot.error
        elif error is not None:
            meta["error"] = error
        await chats.session.append(chat_id, entries, run_id=run_id, meta=meta)
    await cp.delete(run_id)
    return entries


async def _refuse_parked(
    chats: ChatBook, snapshot: RunSnapshot, entries: list[TranscriptEntry], ended: str
) -> list[TranscriptEntry]:
    """A parked run that will not go on: its calls waiting for a decision are rejected
    (recorded, so a late decider gets a conflict) and answered with the refusal the
    model would have seen, so the kept transcript pairs every call with a result."""
    reason = "stopped" if ended == "stopped" else "the conversation went on without it"
    undecided = [p.call_id for p in snapshot.pending_approvals if p.decision is None]
    if undecided and snapshot.status == "interrupted":
        with contextlib.suppress(UserError):  # decided or gone meanwhile: refused anyway
            await approvals.decide_holding(  # the settler holds the run's lease
                chats.checkpointer,
                snapshot.run_id,
                dict.fromkeys(undecided, False),
                reason=reason,
                take_lease=False,
            )
    parked = {p.call_id: p for p in snapshot.pending_approvals}
    refusals: list[TranscriptEntry] = [
        ToolResultEntry(
            call_id=call.call_id,
            output=f"Tool {call.name} was not approved. Reason: {reason}",
            is_error=True,
        )
        for call in dangling_tool_calls(entries)
        if call.call_id in parked
    ]  # the parked calls are the last turn's: their results follow its other results
    return [*entries, *refusals]


class ChatSettler:
    """Stops and settles the runs of chats, each write under the chat's claim or the run's
    lease; the base of ``RunSupervisor``, which starts the runs."""

    def __init__(self, chats: ChatBook, *, lease_ttl: float) -> None:
        self.chats = chats
        self.lease_ttl = lease_ttl  # how long a crashed server's run stays locked
        self.slots = ChatSlots()  # the chats held here: every write goes through it
        self.live = self.slots.live  # each chat's live run here
        # how long an edit (rewind, fork) waits for a stopped run to save what it said
        self.stop_wait = BRIEF_WAIT_S

    def busy_here(self, chat_id: str) -> bool:
        """Whether this server is answering, or writing to, the chat right now."""
        return self.slots.busy(chat_id)

    @contextlib.asynccontextmanager
    async def claimed(self, chat_id: str) -> AsyncIterator[None]:
        """Hold the chat's claim for the block (``ChatBusy`` when a run of it is live): a
        brief hold, which other requests for the chat wait for instead of being refused."""
        async with self.slots.brief_hold(chat_id, self.chats.checkpointer, self.lease_ttl):
            yield

    async def stop(self, chat_id: str) -> LiveRun | None:
        """Stop the chat's live run and wait until its partial transcript is saved (a run
        that is starting here is waited for, then stopped)."""
        run = await self.slots.started(chat_id)
        if run is None:
            return None
        run.stopping = True
        run.token.cancel("stopped by the user")
        await run.finished.wait()
        return run

    async def stopped_runs_done(self, chat_id: str) -> bool:
        """Wait, up to ``stop_wait`` seconds, until no stopped run of the chat is winding
        down here (a sync tool's last seconds, saving what it said); a run stopped while
        this waits is waited for too. ``False`` when one still is: the caller refuses
        rather than cut a chat the stopped run has yet to write to."""
        deadline = time.monotonic() + self.stop_wait
        while (run := self.live.get(chat_id)) is not None and (run.stopping or run.token.cancelled):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.finished.wait(), left)
        return True

    async def settle(
        self,
        chat_id: str,
        run_id: str,
        partial_text: str = "",
        input_text: str | None = None,
        *,
        ended: str = "stopped",
        error: dict[str, Any] | None = None,
        late: list[Any] | None = None,
    ) -> list[TranscriptEntry]:
        """Write a run that will not go on to the session as a completed segment:
        dangling tool calls removed, the streamed text kept, ``{"ended": ended}`` as the
        segment's meta (the page marks such an answer); then delete its checkpoint.

        ``ChatBusy`` when another server (or worker) drives the run: it holds the run's lease,
        and settling would write only part of its answer. The settle holds the lease itself,
        so nobody starts driving the run meanwhile."""
        async with hold_run(self.chats.checkpointer, chat_id, run_id, ttl=self.lease_ttl):
            return await settle_run(
                self.chats,
                chat_id,
                run_id,
                partial_text,
                input_text,
                ended=ended,
                error=error,
                late=late,
            )

    async def settle_pending(self, chat_id: str, *, ended: str | None = None) -> str | None:
        """Before a new run, keep what an unfinished earlier run of the chat said (marked
        with ``ended``, by default the run's status: ``failed``, ``interrupted``...).

        ``ChatBusy`` when that run is live, here or on another server sharing the stores.
        The caller holds the chat's claim (``claimed`` or ``begin``)."""
        pending = await self.chats.pending_head(chat_id)
        if pending is None:
            return None
        if pending.run_id in self.slots.live_run_ids():
            raise busy_elsewhere(chat_id, pending.run_id, "this server")
        await self.settle(chat_id, pending.run_id, ended=ended or pending.status)
        return pending.run_id

    async def stop_parked(self, chat_id: str) -> str | None:
        """Stop the chat's unfinished run that is not live anywhere: calls waiting for an
        approval are rejected (reason "stopped"), and the run is kept as a stopped answer,
        so no approval is left pending. The caller holds the chat's claim."""
        pending = await self.chats.pending_head(chat_id)
        if pending is None:
            return None
        return await self.settle_pending(
            chat_id, ended="stopped" if pending.pending_approvals else None
        )

    async def delete_chat(self, chat_id: str) -> list[str]:
        """Delete the chat and its runs' checkpoints; ``ChatBusy`` while a run of it is live,
        here or on another server (that server would write the chat back when it ends)."""
        async with self.claimed(chat_id):
            pending = await self.chats.pending_head(chat_id)
            if pending is None:
                return await self.chats.delete(chat_id)
            async with hold_run(
                self.chats.checkpointer, chat_id, pending.run_id, ttl=self.lease_ttl
            ):
                return await self.chats.delete(chat_id)

    async def keep_message(self, run: LiveRun, terminal: dict[str, Any]) -> None:
        """A run that failed before its checkpoint held the user's message (its model could
        not even be built): write the message to the chat, marked failed with the error, so
        it does not vanish. A run whose checkpoint has it stays pending (Retry, Keep)."""
        try:
            snapshot = await self.chats.checkpointer.load(run.run_id)
            if snapshot is not None and has_user_message(snapshot.entries):
                return
            error = terminal.get("error") if isinstance(terminal.get("error"), dict) else None
            await self.settle(
                run.chat_id, run.run_id, "", run.input_text, ended="failed", error=error
            )
        except Exception as exc:  # nothing worse than before: the run failed either way
            log.warning("could not keep the message of the failed run %s: %s", run.run_id, exc)
