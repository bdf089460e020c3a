"""A chat's claim: the lease every server sharing the stores takes before it writes to a chat
(and ``hold_run``, a run's own lease, held while a decision or a settle writes to the run).

Two kinds of holder take it. A run holds it for its whole life; another request meeting it
is refused at once (``ChatBusy``), since the run may go on for minutes. A short edit (a
rewind, a delete, settling a stopped run) holds it for the few store calls it makes; its
owner string ends with ``BRIEF_MARK``, and a request that meets such a holder waits for it
(up to ``BRIEF_WAIT_S``) instead of being refused. Without that wait, a page's edit (rewind,
then send) lost its message whenever another server's doomed rewind held the chat for the
moment in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from ..errors import RunBusy, UserError
from ..stores.lease import LeaseStore
from ..stores.run_lease import RunLease, default_owner, holder_is_dead
from .book import chat_claim_key

__all__ = ["BRIEF_MARK", "BRIEF_WAIT_S", "ChatBusy", "busy_elsewhere", "hold_run", "take_claim"]


class ChatBusy(UserError):
    """The chat already has a live run (the API answers 409)."""


BRIEF_MARK = "/brief"
"""The end of a brief holder's owner string (``host/pid/random/brief``)."""
BRIEF_WAIT_S = 10.0
"""How long a request waits for a brief holder before it is refused anyway."""
_POLL_S = 0.05
_FIRST_RETRY_S = 0.005


async def take_claim(store: object, chat_id: str, *, ttl: float, brief: bool) -> RunLease:
    """Take ``chat_id``'s claim in ``store`` (a no-op lease when it has no leases), waiting
    while a brief holder has it; ``ChatBusy`` when a run holds it (or a brief holder keeps it
    past ``BRIEF_WAIT_S``)."""
    leases = store if isinstance(store, LeaseStore) else None
    key = chat_claim_key(chat_id)
    owner = default_owner() + (BRIEF_MARK if brief else "")
    deadline = time.monotonic() + BRIEF_WAIT_S
    pause = 0.0  # after a holder that left in between: at once, then backing off
    while True:
        lease = RunLease(leases, key, ttl=ttl, on_busy="fail", owner=owner)
        try:
            await lease.acquire()
            return lease
        except RunBusy as exc:
            holder = await leases.lease_holder(key) if leases is not None else None
            if holder is None and time.monotonic() < deadline:
                # released in between; a store that keeps refusing and names no holder
                # (a custom one, a lagging read) must not spin the loop for BRIEF_WAIT_S
                await asyncio.sleep(pause)
                pause = min(max(pause * 2, _FIRST_RETRY_S), _POLL_S)
                continue
            if holder is not None and holder.endswith(BRIEF_MARK):
                if time.monotonic() < deadline:
                    await asyncio.sleep(_POLL_S)
                    continue
            raise ChatBusy(
                f"chat {chat_id!r} is busy on another server (or worker) sharing these stores",
                hint="wait for its answer to finish, or stop it where it runs; a crashed "
                "server's claim frees itself after its lease_ttl",
            ) from exc


@contextlib.asynccontextmanager
async def hold_run(store: object, chat_id: str, run_id: str, *, ttl: float) -> AsyncIterator[None]:
    """Hold ``run_id``'s lease in ``store`` (when it has leases) for the block; a holder
    whose process is dead is taken over, a live one is ``ChatBusy``."""
    if not isinstance(store, LeaseStore):
        yield  # a custom checkpointer without leases: nothing to check against
        return
    owner = default_owner()
    if not await store.acquire_lease(run_id, owner, ttl):
        holder = await store.lease_holder(run_id)
        if holder is not None and holder_is_dead(holder):
            await store.release_lease(run_id, holder)  # its server crashed: take it over
        if not await store.acquire_lease(run_id, owner, ttl):
            raise busy_elsewhere(chat_id, run_id, holder or "another server")
    try:
        yield
    finally:
        await store.release_lease(run_id, owner)


def busy_elsewhere(chat_id: str, run_id: str, where: str) -> ChatBusy:
    """``ChatBusy`` for a chat whose run ``run_id`` is live on ``where``."""
    return ChatBusy(
        f"chat {chat_id!r} is busy: its run {run_id!r} is live on {where}",
        hint="wait for that run to finish (or stop it where it runs); a crashed server's "
        "run frees itself after its lease_ttl",
    )
