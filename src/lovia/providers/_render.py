"""Render a model view into a wire format once per entry, not once per turn.

A run sends the model the whole conversation on every turn, and most of it is what the
previous turn (or the previous run of the same session) already sent: the session's entries
are the same objects from run to run, and a run only appends. ``BodyCache`` keeps the last
renderings and, for a new view, reuses the longest rendered prefix that is still the same
(compared in C, object identity first, then value), rendering only the rest. The cost of a
turn then depends on what is new, not on the length of the history.

A renderer appends wire messages for ``entries[start:]`` to ``out`` and records *marks*:
``(entry index, len(out))`` at the points where it could restart from scratch given only the
output so far (no half-built message pending). Rendering must be a pure function of the
entries' content, and the messages before a mark must never be changed afterwards (they
are shared between the views that have that prefix).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ..transcript import TranscriptEntry, leading_system_count

__all__ = ["BodyCache", "Marks", "Renderer"]

T = TypeVar("T")

Marks = list[tuple[int, int]]
Renderer = Callable[[Sequence[TranscriptEntry], int, list[T], Marks], None]
"""``render(entries, start, out, marks)``: append the messages of ``entries[start:]``."""

CACHED_VIEWS = 32
"""How many renderings a cache keeps (about one per live conversation)."""
SMALL_VIEW = 16
"""Views with fewer entries (after the instructions) are rendered without the cache."""


class _Rendered(Generic[T]):
    __slots__ = ("entries", "marks", "out")

    def __init__(self, entries: list[TranscriptEntry], out: list[T], marks: Marks) -> None:
        self.entries = entries
        self.out = out
        self.marks = marks


class BodyCache(Generic[T]):
    """Renderings of recent views, keyed by the identity of their first entry."""

    def __init__(self, render: Renderer[T], size: int = CACHED_VIEWS) -> None:
        self._render = render
        self._size = size
        self._views: OrderedDict[int, _Rendered[T]] = OrderedDict()

    def render(self, entries: Sequence[TranscriptEntry]) -> list[T]:
        """The wire messages for ``entries`` (a new list; its messages may be shared).

        Leading system entries (the instructions, new objects on every run and different
        after a handoff) are rendered apart, so the cache is keyed by the first entry after
        them: the start of the session history or of the run's input.
        """
        k = leading_system_count(entries)
        out: list[T] = []
        if k:
            self._render(entries[:k], 0, out, [])
        if k == len(entries):
            return out
        out.extend(self._body(list(entries[k:])))
        return out

    def _body(self, body: list[TranscriptEntry]) -> list[T]:
        if len(body) < SMALL_VIEW:  # cheaper to render than to look up and remember
            out: list[T] = []
            self._render(body, 0, out, [])
            return out
        anchor = body[0]
        key = id(anchor)
        out = []
        marks: Marks = []
        start = 0
        cached = self._views.get(key)
        if cached is not None and cached.entries[0] is anchor:
            found = _reusable(cached, body)
            if found is not None:
                k, (start, length) = found
                out = cached.out[:length]
                marks = cached.marks[:k]  # the renderer marks ``start`` again
        self._render(body, start, out, marks)
        views = self._views
        # Runs on other threads (run_sync) may share this cache: every step below is one
        # dict operation, and a lost race only costs a later render its reuse.
        views.pop(key, None)
        views[key] = _Rendered(body, out, marks)
        while len(views) > self._size:
            try:
                views.popitem(last=False)
            except KeyError:
                break
        return out

    def clear(self) -> None:
        self._views.clear()


def _reusable(
    cached: _Rendered[T], body: list[TranscriptEntry]
) -> tuple[int, tuple[int, int]] | None:
    """The last mark of ``cached`` whose prefix ``body`` shares (index into marks, mark)."""
    marks = cached.marks
    old = cached.entries
    n = len(body)

    def same(i: int) -> bool:
        return i <= n and body[:i] == old[:i]

    hi = len(marks) - 1
    while hi >= 0 and marks[hi][0] > n:
        hi -= 1
    if hi < 0:
        return None
    if same(marks[hi][0]):  # the common case: the view grew at the end
        return hi, marks[hi]
    lo, best = 0, -1
    hi -= 1
    while lo <= hi:  # the prefix property is monotone: binary search for the last one
        mid = (lo + hi) // 2
        if same(marks[mid][0]):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return (best, marks[best]) if best >= 0 else None
