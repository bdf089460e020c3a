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
from .side_runs import SIDE_RUN_PREFIXES, is_title_run
from .titles import TitleMaker

if TYPE_CHECKING:
    from .side_deps import SideDeps

__all__ = ["finish_background"]

log = logging.getLogger("lovia.web")


async def finish_background(deps: SideDeps, unfinished: Sequence[RunInfo]) -> int:
    """Start finishing the title and follow-up runs among ``unfinished`` (the heads of the
    stored runs that did not complete, ``ChatBook.unfinished_runs``); returns how many."""
    started = 0
    for head in unfinished:
        side = not head.session_id and head.run_id.startswith(SIDE_RUN_PREFIXES)
        if not side or head.status == "failed":
            continue
        run = await deps.store.checkpointer.load(head.run_id)
        if run is None or not run.entries or run.status == "completed":
            continue
        if is_title_run(head.run_id):
            TitleMaker(deps).finish(run)
        else:
            deps.spawn(finish_followups(deps, run))
        started += 1
    if started:
        log.info("finishing %d title/follow-up call(s) a stopped server left", started)
    return started
