"""``lovia runs show``'s timeline: a run's model turns and tool calls in the order they ran,
with how long each took and the tokens of each turn, drawn from the head's ``timeline``; and
``--follow``, which draws a live run's lines as they land until the run stops."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from ..transcript import ToolCallEntry, ToolResultEntry
from .common import counted, db_stores
from .render import plain

__all__ = ["follow_run", "timeline_lines", "usage_line"]

FOLLOW_POLL_S = 0.25
LIVE = "running"
NO_RESULT = "no result yet (running, or cut off)"


def _seconds(value: float) -> str:
    return f"{value:.2f}s" if value < 60 else f"{int(value // 60)}m{value % 60:04.1f}s"


def _offset(ts: float, origin: float) -> str:
    """``   +0.04s``: when something began, counted from the run's start."""
    return f"{'+' + _seconds(max(0.0, ts - origin)):>10}"


def _clock(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def usage_line(head: Any) -> str:
    """``tokens: 1,234 (in 1,000, out 234)``, with the cached ones when the model said."""
    usage = head.usage
    line = f"tokens: {usage.total_tokens:,} (in {usage.input_tokens:,}, out {usage.output_tokens:,}"
    if usage.cache_read_tokens or usage.cache_write_tokens:
        line += f"; cache read {usage.cache_read_tokens:,}, written {usage.cache_write_tokens:,}"
    return line + ")"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


Row = tuple[float, tuple[Any, ...], str]  # when, key, text


def timeline_rows(head: Any, entries: Sequence[Any] = ()) -> list[Row]:
    """``(when, key, text)`` for each line of the timeline, in the order things ran; a line's
    key changes when its text does (a call that ended), so a follower prints it again. A
    tool call of ``entries`` with no result and no timing yet (its start is saved with its
    result) is drawn after the latest turn, as not answered yet."""
    timeline = getattr(head, "timeline", None) or {}
    turns = [r for r in timeline.get("turns", ()) if isinstance(r, list) and len(r) >= 6]
    calls = [r for r in timeline.get("calls", ()) if isinstance(r, list) and len(r) >= 5]
    starts = [s for r in turns + calls if (s := _number(r[2])) is not None]
    if not starts:
        return []
    origin = _number(getattr(head, "started_at", None)) or min(starts)
    out: list[Row] = []
    for turn, agent, start, end, tokens_in, tokens_out in (r[:6] for r in turns):
        began, ended = _number(start), _number(end)
        if began is None or ended is None:
            continue
        took = _seconds(max(0.0, ended - began))
        text = (
            f"{_offset(began, origin)}  turn {turn} ({agent}): model {took}, "
            f"tokens in {tokens_in or 0:,} out {tokens_out or 0:,}"
        )
        out.append((began, ("turn", turn, began), text))
    for call_id, tool, start, end, is_error in (r[:5] for r in calls):
        began, ended = _number(start), _number(end)
        if began is None:
            continue
        if ended is None:
            how = NO_RESULT
        else:
            how = f"{_seconds(max(0.0, ended - began))}, {'error' if is_error else 'ok'}"
        text = f"{_offset(began, origin)}    tool {tool} [{call_id}]: {how}"
        out.append((began, ("call", call_id, began, ended is not None), text))
    timed = {r[0] for r in calls}
    answered = {e.call_id for e in entries if isinstance(e, ToolResultEntry)}
    latest = max((_number(r[3]) or 0.0 for r in turns), default=origin)
    for e in entries:
        if isinstance(e, ToolCallEntry) and e.call_id not in answered | timed:
            text = f"{_offset(latest, origin)}    tool {e.name} [{e.call_id}]: {NO_RESULT}"
            out.append((latest, ("call", e.call_id, None, False), text))
    out.sort(key=lambda row: row[0])
    return out


def timeline_lines(head: Any, entries: Sequence[Any] = ()) -> list[str]:
    """The timeline as lines, a heading first; none for a run stored without one."""
    rows = timeline_rows(head, entries)
    if not rows:
        return []
    origin = _number(getattr(head, "started_at", None)) or rows[0][0]
    return [f"timeline (from {_clock(origin)}):", *(text for _, _, text in rows)]


def _status_line(snap: Any) -> str:
    return f"run {snap.run_id}: {snap.status}, agent {snap.agent_name}, " + counted(
        snap.turns, "turn"
    )


async def follow_run(args: argparse.Namespace, first: Any) -> int:
    """Print the run's timeline, then each new line as the run saves it, until its status is
    no longer ``running``; then its end (answer or error). Only reads the store."""
    print(_status_line(first))
    print(f"following run {first.run_id} (Ctrl-C stops following; the run goes on)")
    printed: set[tuple[Any, ...]] = set()
    snap = first
    while True:
        _print_new(timeline_rows(snap.head, snap.entries), printed)
        if snap.status != LIVE:
            break
        await asyncio.sleep(FOLLOW_POLL_S)
        async with db_stores(args, read_only=True, note=False) as (_session, cp):
            latest = await cp.load(args.run_id)
        if latest is None:
            print(f"run {args.run_id} was deleted while it was followed")
            return 0
        snap = latest
    print(_status_line(snap))
    print(usage_line(snap.head))
    if snap.error:
        print(plain(f"error: {snap.error.get('message')}", lines=True))
    elif snap.status == "completed" and snap.output is not None:
        print(plain(f"answer: {snap.output}", lines=True))  # the model's: escaped
    return 0


def _print_new(rows: Iterable[Row], printed: set[Any]) -> None:
    for _, key, text in rows:
        if key not in printed:
            printed.add(key)
            print(plain(text), flush=True)
