"""The timing a run records in its segment's meta: its first start and its end."""

from __future__ import annotations

from typing import Any

from ..session import TIMING_META_KEY
from ..stores.session_protocol import Segment

__all__ = ["result_timing", "run_timing"]


def run_timing(segment: Segment) -> tuple[float, float] | None:
    """The segment's ``(started_at, finished_at)``, or None when it recorded none."""
    timing = (segment.meta or {}).get(TIMING_META_KEY)
    if not isinstance(timing, dict):
        return None
    start, finish = _seconds(timing.get("started_at")), _seconds(timing.get("finished_at"))
    if start is None or finish is None:
        return None
    return (start, max(start, finish))


def _seconds(value: Any) -> float | None:
    """A recorded time, or None for anything else (a flag, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def result_timing(result: Any) -> dict[str, float] | None:
    """The ``timing`` event of a finished run from its result's dict (``RunResult.to_dict``:
    the ``started_at`` and ``finished_at`` its save wrote into its segment); None when it
    carries none (a replay that did not read its segment, a run resumed from a checkpoint
    that predates timing)."""
    if not isinstance(result, dict):
        return None
    start, finish = _seconds(result.get("started_at")), _seconds(result.get("finished_at"))
    if start is None or finish is None:
        return None
    return {"finished_at": max(start, finish), "duration": max(start, finish) - start}
