"""The view a ``CompactionState`` stands for, and where its protected tail begins.

``render_view`` is a pure function of the transcript and the state: cleared results show a
one-line marker, offloaded results their preview marker, and the summarized prefix one
summary entry. The markers are the ones the default policy renders (``clear_marker``,
``offload_marker``, ``summary_entry``), so a stage pipeline and the default policy show
the model the same texts. The stage pipeline (``Compaction(stages=...)``) renders with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..transcript import (
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    leading_system_count,
)
from ._render import clear_marker, offload_marker, summary_entry
from .state import CompactionState, fingerprint
from .tokens import TokenCounter

__all__ = [
    "pair_safe_cuts",
    "protected_tail_start",
    "render_body",
    "render_view",
    "summary_holds",
]


def render_view(
    entries: Sequence[TranscriptEntry], state: CompactionState
) -> list[TranscriptEntry]:
    """The entries one model call sees under ``state``; ``entries`` is never changed.

    The leading system entries stay first; an entry nothing was decided about is passed
    through as the same object. A summary whose coverage does not fit ``entries`` is
    ignored (its fingerprint is checked when the state is loaded, not here).
    """
    n = leading_system_count(entries)
    return [*entries[:n], *render_body(entries[n:], state)]


def render_body(body: Sequence[TranscriptEntry], state: CompactionState) -> list[TranscriptEntry]:
    """``render_view`` for a transcript without its system entries."""
    covered = _covered(body, state)
    out: list[TranscriptEntry] = []
    if covered:
        assert state.summary is not None
        out.append(summary_entry(state.summary.text))
    out.extend(shown(e, state) for e in body[covered:])
    return out


def shown(entry: TranscriptEntry, state: CompactionState) -> TranscriptEntry:
    """One entry as the view shows it under ``state`` (the summary aside)."""
    if not isinstance(entry, ToolResultEntry):
        return entry
    record = state.offloaded.get(entry.call_id)
    if record is not None:
        text = offload_marker(record)
    elif entry.call_id in state.cleared:
        text = clear_marker(entry.call_id, len(entry.output))
    else:
        return entry
    return entry.model_copy(update={"output": text, "parts": None, "raw": None})


def summary_holds(body: Sequence[TranscriptEntry], state: CompactionState) -> bool:
    """Whether the state's summary still covers the prefix it was written for."""
    s = state.summary
    return (
        s is not None
        and 0 < s.covered <= len(body)
        and fingerprint(body[: s.covered]) == (s.fingerprint)
    )


def _covered(body: Sequence[TranscriptEntry], state: CompactionState) -> int:
    s = state.summary
    if s is None or not s.text or not 0 < s.covered <= len(body):
        return 0
    return s.covered


def pair_safe_cuts(entries: Sequence[TranscriptEntry]) -> list[bool]:
    """For each cut position 0..len, whether the entries after it keep every tool result
    with its call: per ``call_id``, no result after the cut may find no call open for it.

    Calls and results of one id pair up like parentheses (reused ids nest); a result
    whose id has no call anywhere constrains nothing, nor does a call never answered.
    """
    n = len(entries)
    events: dict[str, list[tuple[int, int]]] = {}
    called: set[str] = set()
    for i, e in enumerate(entries):
        if isinstance(e, ToolCallEntry):
            events.setdefault(e.call_id, []).append((i, 1))
            called.add(e.call_id)
        elif isinstance(e, ToolResultEntry):
            events.setdefault(e.call_id, []).append((i, -1))
    unsafe = [0] * (n + 2)  # a difference array over cut positions
    for call_id in called:
        marks = events[call_id]
        balance = [0]
        for _, step in marks:
            balance.append(balance[-1] + step)
        lowest = balance[-1]  # the lowest balance after segment k, from the end backwards
        for k in range(len(marks) - 1, -1, -1):
            lowest = min(lowest, balance[k + 1])
            if lowest < balance[k]:  # some later result finds no call open: cuts here split
                first = marks[k - 1][0] + 1 if k else 0
                unsafe[first] += 1
                unsafe[marks[k][0] + 1] -= 1
    out, depth = [], 0
    for i in range(n + 1):
        depth += unsafe[i]
        out.append(depth == 0)
    return out


def protected_tail_start(
    body: Sequence[TranscriptEntry], counter: TokenCounter, ratio: float, tail_tokens: int
) -> int:
    """The first body position of the tail no stage may touch.

    The tail is the newest entries that fit ``tail_tokens`` (calibrated by ``ratio``), and
    always the newest entry. It reaches back to the latest user message when the whole
    stretch costs at most twice the budget, and never starts between a call and its result.
    """
    if not body:
        return 0
    budget = tail_tokens / ratio if ratio > 0 else float(tail_tokens)
    cost = [counter.count_entry(e) for e in body]
    start, acc = len(body) - 1, cost[-1]
    while start > 0 and acc + cost[start - 1] <= budget:
        start -= 1
        acc += cost[start]
    user = _last_user(body)
    if 0 <= user < start and sum(cost[user:]) <= 2 * budget:
        start = user
    safe = pair_safe_cuts(body)
    while start > 0 and not safe[start]:
        start -= 1
    return start


def _last_user(body: Sequence[TranscriptEntry]) -> int:
    for i in range(len(body) - 1, -1, -1):
        e = body[i]
        if isinstance(e, InputEntry) and e.role == "user":
            return i
    return -1
