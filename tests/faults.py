"""One fault-injecting session for the failure tests: a user-written store (legal as
``session=``) around a real one, with a hook before and after each append.

A hook gets the append's ``run_id`` and may raise (a dropped connection), kill the process
(a crash) or do nothing. ``versioned=True`` also offers the inner store's ``history``, as a
built-in store does, so the runner appends with its version check; ``versioned=False``
leaves only the four protocol methods (the runner then appends unchecked).

Child processes run as scripts: they put the repository root on ``sys.path`` to import it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lovia import Segment, StoreError, TranscriptEntry

Hook = Callable[[str | None], None]


def _nothing(run_id: str | None) -> None:
    return None


class FaultySession:
    """The four protocol methods (and ``history`` if ``versioned``) of ``inner``, with
    ``before(run_id)`` and ``after(run_id)`` around each append."""

    def __init__(
        self,
        inner: Any,
        *,
        before: Hook = _nothing,
        after: Hook = _nothing,
        versioned: bool = True,
    ) -> None:
        self.inner = inner
        self.before = before
        self.after = after
        if versioned:
            self.history = inner.history

    async def segments(self, session_id: str) -> list[Segment]:
        segments: list[Segment] = await self.inner.segments(session_id)
        return segments

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        entries: list[TranscriptEntry] = await self.inner.load(session_id)
        return entries

    async def append(
        self, session_id: str, entries: Sequence[TranscriptEntry], **options: Any
    ) -> str:
        self.before(options.get("run_id"))
        stored = await self.inner.append(session_id, entries, **options)
        self.after(options.get("run_id"))
        return str(stored)

    async def clear(self, session_id: str) -> None:
        await self.inner.clear(session_id)


def fail_appends(times: int, error: Callable[[], BaseException]) -> Hook:
    """A ``before`` hook: the first ``times`` appends raise ``error()`` (``-1``: every one)."""
    left = [times]

    def hook(run_id: str | None) -> None:
        if left[0] != 0:
            left[0] -= 1
            raise error()

    return hook


def fail_first_append_of(victim: str, error: Callable[[], BaseException]) -> Hook:
    """A ``before`` hook: the first append of run ``victim`` raises ``error()``."""
    pending = [True]

    def hook(run_id: str | None) -> None:
        if run_id == victim and pending[0]:
            pending[0] = False
            raise error()

    return hook


def dropped_connection() -> StoreError:
    return StoreError("the session store went away")
