"""When each message of a chat was said: the ``timestamp`` of every message and the
``duration`` of each answer that ended a run, from the ``timing`` a run records in its
segment's meta (its first start and its end, Unix seconds).

A timed run's messages, up to and including its last assistant message, are spread evenly
from its start to its end; that message carries the run's duration, and any message after
it (a tool result a stop cut off) stands at the end. Runs that recorded no timing (older
files, runs resumed from before timing) have their messages spread between their known
neighbours: the timed runs around them, else the chat's creation and last update. Stamps
never go backwards, whatever the bounds say.
"""

from __future__ import annotations

from typing import Any

from ..chats.timing import run_timing

__all__ = ["Group", "run_timing", "stamp"]

Message = dict[str, Any]
Group = tuple[list[Message], tuple[float, float] | None]


def _spread(
    messages: list[Message], low: float, high: float, open_low: bool, open_high: bool
) -> None:
    """Even steps from ``low`` to ``high``; an open end is a point a timed message holds
    already, so none of these lands on it."""
    count = len(messages) + open_low + open_high
    step = (high - low) / (count - 1) if count > 1 else 0.0
    for n, message in enumerate(messages, start=int(open_low)):
        message["timestamp"] = low + n * step


def _stamp_run(messages: list[Message], start: float, finish: float) -> None:
    answers = [n for n, m in enumerate(messages) if m["role"] == "assistant"]
    last = answers[-1] if answers else len(messages) - 1
    said = messages[: last + 1]
    if len(said) == 1:
        said[0]["timestamp"] = finish if answers else start
    else:
        _spread(said, start, finish, False, False)
    if answers:
        said[-1]["duration"] = finish - start
    for message in messages[last + 1 :]:
        message["timestamp"] = finish


def stamp(groups: list[Group], created_at: float | None, updated_at: float | None) -> None:
    """Stamp each group's messages (one group per run, in order, with its timing) in place.
    With no bounds and no timing, untimed messages keep ``timestamp: None``."""
    gap: list[Message] = []
    low: float | None = created_at
    open_low = False  # a timed run's end holds ``low``
    for messages, timing in groups:
        if timing is None:
            gap += messages
            continue
        start, finish = timing
        if low is not None and low > start:  # a bound past a timed run: keep the order
            low = start if not open_low else low
        _fill(gap, low, start, open_low, True)
        gap = []
        if low is not None and open_low and start < low:
            start = low  # clocks disagreed: never before the run before it
            finish = max(finish, start)
        _stamp_run(messages, start, finish)
        low, open_low = finish, True
    high = updated_at if updated_at is not None else low
    if high is not None and low is not None and high < low:
        high = low
    _fill(gap, low, high, open_low, False)


def _fill(
    gap: list[Message], low: float | None, high: float | None, open_low: bool, open_high: bool
) -> None:
    if not gap:
        return
    if low is None:
        low, open_low = high, open_high
    if high is None or low is None:
        return
    if open_low and open_high and high <= low:
        for message in gap:
            message["timestamp"] = low
        return
    _spread(gap, low, max(low, high), open_low, open_high)
