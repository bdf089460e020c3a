"""The timing a run records in its segment's meta: its first start and its end."""

from __future__ import annotations

from typing import Any

from ..session import TIMING_META_KEY
from ..stores.session_protocol import Segment

__all__ = ["run_timing", "timing_event"]


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


def timing_event(segment: Segment) -> dict[str, float] | None:
    """The chat stream's ``timing`` event for the run ``segment`` holds, as it recorded it:
    ``{finished_at, duration}``; None for a run that recorded no timing."""
    timing = run_timing(segment)
    if timing is None:
        return None
    return {"finished_at": timing[1], "duration": timing[1] - timing[0]}
