"""Holding a chat while a command line maintenance command changes it, and the commands that
do (``lovia sessions trim``, ``rewind`` and ``clear``).

``lovia sessions clear``, ``rewind`` and ``trim`` change a conversation another process may
be answering at that moment (a ``lovia web`` sharing the database, or a worker driving one
of its runs). Like the web server, they first take the chat's claim, then the lease of each
of its checkpointed runs; when any of them is held by a live process the command is refused
before it changes anything, naming the holder.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..chats.book import chat_claim_key
from ..errors import RunBusy, StoreError, UserError
from ..stores.capabilities import ListsRunHeads, has_capability
from ..stores.lease import LeaseStore
from ..stores.maintenance import check_count
from ..stores.run_lease import RunLease
from .common import counted, db_stores, print_json, shown_db

__all__ = ["chat_held", "known_session", "sessions_clear", "sessions_rewind", "sessions_trim"]

_TTL = 30.0  # seconds; the heartbeat renews it while the command runs


async def _segment_run_ids(session: Any, chat_id: str) -> list[str] | None:
    """The session's run ids; ``None`` when a stored segment does not decode (the session
    can still be cleared, which is what that error's hint says to do)."""
    try:
        return [s.run_id for s in await session.segments(chat_id)]
    except StoreError:
        return None


async def _run_ids(session: Any, cp: Any, chat_id: str) -> list[str]:
    ids = await _segment_run_ids(session, chat_id) or []
    if has_capability(cp, ListsRunHeads):
        ids += [h.run_id for h in await cp.list_run_heads(session_id=chat_id)]
    else:
        ids += [r.run_id for r in await cp.list_runs() if r.session_id == chat_id]
    return list(dict.fromkeys(ids))


async def known_session(args: argparse.Namespace) -> None:
    """Refuse ``args.session_id`` when nothing is stored under it (no entries and no
    checkpointed run), read without changing the file: a mistyped id is an error, not an
    empty session."""
    async with db_stores(args, read_only=True, note=False) as (session, cp):
        damaged = await _segment_run_ids(session, args.session_id) is None
        runs = await _run_ids(session, cp, args.session_id)
    if not runs and not damaged:
        raise UserError(
            f"no session {args.session_id!r} in {shown_db(args.db)!r}",
            hint="see 'lovia sessions list'",
        )


@contextlib.asynccontextmanager
async def chat_held(session: Any, cp: Any, chat_id: str) -> AsyncIterator[None]:
    """Hold ``chat_id``'s claim and its runs' leases for the block, or raise ``RunBusy``
    (nothing changed) when another live process holds any of them. Without lease support
    in the checkpointer there is nothing to hold."""
    if not isinstance(cp, LeaseStore):
        yield
        return
    held: list[RunLease] = []
    try:
        for key in [chat_claim_key(chat_id), *await _run_ids(session, cp, chat_id)]:
            lease = RunLease(cp, key, ttl=_TTL, on_busy="fail")
            try:
                await lease.acquire()
            except RunBusy as exc:
                holder = await cp.lease_holder(key)
                raise RunBusy(
                    f"session {chat_id!r} is being answered by {holder or 'another process'}"
                    "; nothing was changed",
                    hint="stop that run (or let it finish), then run the command again; a "
                    "crashed server's or worker's lease expires after its lease_ttl",
                ) from exc
            held.append(lease)
        yield
    finally:
        for lease in reversed(held):
            await lease.release()


async def sessions_trim(args: argparse.Namespace) -> int:
    check_count(args.keep_chars, "keep_chars")  # refused before the chat is held: no write
    check_count(args.keep_runs, "keep_runs")
    await known_session(args)  # an unknown id is refused before the file is opened to write
    async with db_stores(args) as (session, cp), chat_held(session, cp, args.session_id):
        count = await session.trim_tool_results(
            args.session_id, keep_chars=args.keep_chars, keep_runs=args.keep_runs
        )
    print_json({"trimmed": count}) if args.json else print(
        f"trimmed {counted(count, 'tool result')}"
    )
    return 0


async def sessions_rewind(args: argparse.Namespace) -> int:
    from ..chats.book import ChatBook

    check_count(args.keep, "keep_entries")  # refused before the chat is held: no write
    await known_session(args)
    async with db_stores(args) as (session, cp), chat_held(session, cp, args.session_id):
        done = await ChatBook(session, cp).rewind(args.session_id, args.keep)
    out = {"removed": done.removed, "checkpoints_deleted": list(done.affected_run_ids)}
    if args.json:
        print_json(out)
    else:
        removed = counted(done.removed, "entry", "entries")
        print(f"removed {removed}; deleted {counted(len(done.affected_run_ids), 'checkpoint')}")
    return 0


async def sessions_clear(args: argparse.Namespace) -> int:
    from ..chats.book import ChatBook

    await known_session(args)
    async with db_stores(args) as (session, cp), chat_held(session, cp, args.session_id):
        runs = await ChatBook(session, cp).delete(args.session_id)
    out = {"cleared": args.session_id, "checkpoints_deleted": runs}
    print_json(out) if args.json else print(
        f"cleared {args.session_id} ({counted(len(runs), 'run')})"
    )
    return 0
