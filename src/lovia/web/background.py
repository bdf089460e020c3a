"""The server's own background work left unfinished: titles and follow-up suggestions.

Each is a checkpointed run of no chat (its id from ``web.side_runs``). A server that starts
finds those a stopped server left running and finishes them, each under its run's lease: of
two servers on one database, one calls the model and the other replays its answer. A run
that failed is left alone (the first message stays the title; follow-ups are made again
when asked for).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..stores.checkpoint import RunInfo
from .followups import finish_followups
from .side_runs import SIDE_RUN_PREFIXES, chat_key, chat_of, is_title_run, needs_keys
from .titles import TitleMaker

if TYPE_CHECKING:
    from .side_deps import SideDeps

__all__ = ["finish_background"]

log = logging.getLogger("lovia.web")


async def finish_background(deps: SideDeps, unfinished: Sequence[RunInfo]) -> int:
    """Start finishing the title and follow-up runs among ``unfinished`` (the heads of the
    stored runs that did not complete, ``ChatBook.unfinished_runs``); returns how many."""
    heads = [
        head
        for head in unfinished
        if not head.session_id
        and head.run_id.startswith(SIDE_RUN_PREFIXES)
        and head.status != "failed"
    ]
    # a chat whose id is too long for a readable side run id is found by its key
    keys = await _chat_keys(deps) if any(needs_keys(h.run_id) for h in heads) else {}
    started = 0
    for head in heads:
        chat_id = chat_of(head.run_id, keys)
        if chat_id is None:
            continue  # its chat is gone (its side runs go with it), or cannot be told
        run = await deps.store.checkpointer.load(head.run_id)
        if run is None or not run.entries or run.status == "completed":
            continue
        if is_title_run(head.run_id):
            TitleMaker(deps).finish(chat_id, run)
        else:
            deps.spawn(finish_followups(deps, chat_id, run))
        started += 1
    if started:
        log.info("finishing %d title/follow-up call(s) a stopped server left", started)
    return started


async def _chat_keys(deps: SideDeps, page: int = 500) -> dict[str, str]:
    """``{chat_key(chat): chat}`` of every stored chat (read only when a side run's id
    names its chat by key: a chat id of about 500 characters)."""
    keys: dict[str, str] = {}
    offset = 0
    while True:
        chats = await deps.store.list(limit=page, offset=offset)
        keys.update((chat_key(c.id), c.id) for c in chats)
        if len(chats) < page:
            return keys
        offset += page
