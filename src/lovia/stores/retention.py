"""Retention for checkpointers: which stored runs ``prune`` may forget.

A checkpoint is the record of one run; once the run is finished (its segment is in the
session, or its answer was delivered) the checkpoint only serves replays of that ``run_id``.
``prune`` deletes finished runs past an age, so a checkpoint store does not grow without
bound. Sessions are never touched.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from ..errors import UserError
from .checkpoint import RUN_STATUSES

__all__ = ["DEFAULT_PRUNE_STATUSES", "prune_filter"]

DEFAULT_PRUNE_STATUSES: tuple[str, ...] = ("completed", "failed")


def prune_filter(older_than: Any, statuses: Any) -> tuple[float | None, tuple[str, ...]]:
    """Check ``prune``'s arguments: the cutoff time (``None`` for any age) and the statuses.

    ``older_than`` is in seconds: runs last saved more than that long ago are pruned.
    """
    cutoff: float | None = None
    if older_than is not None:
        if (
            isinstance(older_than, bool)
            or not isinstance(older_than, (int, float))
            or not math.isfinite(older_than)
            or older_than < 0
        ):
            raise UserError(
                f"older_than must be a number of seconds >= 0, got {older_than!r}",
                hint="prune(older_than=7 * 86400) keeps the last week; None prunes any age",
            )
        cutoff = time.time() - float(older_than)
    if isinstance(statuses, str) or not isinstance(statuses, Sequence):
        raise UserError(
            f"statuses must be a list of run statuses, got {statuses!r}",
            hint=f"pass statuses=[{statuses!r}]" if isinstance(statuses, str) else None,
        )
    unknown = [s for s in statuses if s not in RUN_STATUSES]
    if unknown:
        raise UserError(
            f"unknown run status {unknown[0]!r}",
            hint=f"use any of {', '.join(RUN_STATUSES)}",
        )
    return cutoff, tuple(dict.fromkeys(statuses))
