"""Compaction stages: each one records decisions in a ``CompactionState``; none edits a view.

A stage gets the transcript body (the system entries left out) and a ``StageContext``, and
returns whether it decided anything new. ``Compaction(stages=[...])`` runs its stages in
order, re-rendering (``render_view``) and re-counting after each one that decided
something, until the view is under the budget's target. Decisions only ever grow, so the
compacted prefix renders to the same bytes on every later call.

The three stages lovia ships, cheapest first: ``OffloadToolResults`` (a large result
becomes a preview marker), ``ClearToolResults`` (an older result becomes a one-line
marker) and ``SummarizeHistory`` (the oldest span becomes a summary, with a model call).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..transcript import ToolResultEntry, TranscriptEntry
from ._render import clear_marker, offload_marker
from .policy import CompactionRequest
from .render import pair_safe_cuts, shown
from .results import put_result
from .state import (
    CompactionState,
    OffloadRecord,
    SummaryState,
    fingerprint,
    result_digest,
    unique_result_ids,
)
from .summarizer import LLMSummarizer
from .tokens import TokenBudget, TokenCounter, usable_tokens

if TYPE_CHECKING:
    from .results import ResultStore

__all__ = [
    "ClearToolResults",
    "OffloadToolResults",
    "Stage",
    "StageContext",
    "SummarizeHistory",
]

log = logging.getLogger("lovia.context")


@dataclass
class StageContext:
    """What a stage plans against for one model call.

    ``state`` is where a stage writes its decisions. ``current_tokens`` is the calibrated
    estimate of the view as rendered now; ``protected_from`` is the first body position
    no stage may touch (except, when ``aggressive``, a result too big for the target on
    its own). ``aggressive`` is set after the provider refused a view as too long.
    ``model_window`` is the model's real window when known (on the aggressive path the
    budget is sized from the refused view instead).
    """

    request: CompactionRequest
    state: CompactionState
    counter: TokenCounter
    budget: TokenBudget
    current_tokens: int
    protected_from: int
    aggressive: bool = False
    store: ResultStore | None = None
    model_window: int | None = None

    def calibrated(self, raw_tokens: int) -> int:
        """``raw_tokens`` scaled by the ratio the provider's reported usage taught."""
        return int(raw_tokens * self.state.ratio)


@runtime_checkable
class Stage(Protocol):
    """One compaction step: ``name`` and ``async plan(body, ctx) -> bool``.

    ``plan`` records decisions in ``ctx.state`` and returns True when it decided anything
    new; it never changes ``body`` and never undoes an earlier decision. A stage that
    fails should log and return False: the pipeline keeps what was decided before.
    """

    name: str

    async def plan(self, body: list[TranscriptEntry], ctx: StageContext) -> bool: ...


def _candidates(body: Sequence[TranscriptEntry], state: CompactionState) -> list[int]:
    """Positions of the results a stage may decide about: after the summary, and with a
    call id no other result carries (a decision by id would hit every result with it)."""
    covered = state.summary.covered if state.summary is not None else 0
    unique = unique_result_ids(body)
    return [
        i
        for i in range(covered, len(body))
        if isinstance(e := body[i], ToolResultEntry) and e.call_id in unique
    ]


def _may_touch(ctx: StageContext, entry: ToolResultEntry, protected: bool) -> bool:
    """A protected result is left alone, unless the view was refused and it alone is over
    the target: kept as it is, the retry would be refused again."""
    if not protected:
        return True
    return ctx.aggressive and ctx.calibrated(ctx.counter.count_entry(entry)) > (
        ctx.budget.target_tokens
    )


def _saving(ctx: StageContext, entry: ToolResultEntry, marker: str) -> int:
    return ctx.calibrated(max(0, ctx.counter.count_entry(entry) - ctx.counter.count_text(marker)))


class OffloadToolResults:
    """Show large tool results (``min_chars`` and up) as a preview, oldest first.

    The newest ``keep_last`` results stay whole. With a result store the whole output is
    archived under its digest (a store that fails is logged; the marker stays, and recall
    finds the output in the transcript).
    """

    name = "offload"

    def __init__(
        self, *, min_chars: int = 4_000, keep_last: int = 2, preview_chars: int = 400
    ) -> None:
        if min_chars < 1:
            raise ValueError(f"min_chars must be >= 1, got {min_chars}")
        if keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {keep_last}")
        if preview_chars < 0:
            raise ValueError(f"preview_chars must be >= 0, got {preview_chars}")
        self.min_chars, self.keep_last, self.preview_chars = min_chars, keep_last, preview_chars

    async def plan(self, body: list[TranscriptEntry], ctx: StageContext) -> bool:
        found = _candidates(body, ctx.state)
        tokens, decided = ctx.current_tokens, False
        for n, i in enumerate(found):
            if tokens <= ctx.budget.target_tokens:
                break
            entry = body[i]
            assert isinstance(entry, ToolResultEntry)
            protected = n >= len(found) - self.keep_last or i >= ctx.protected_from
            if ctx.state.decided(entry.call_id) or len(entry.output) < self.min_chars:
                continue
            if not _may_touch(ctx, entry, protected):
                continue
            digest = result_digest(entry.output)
            if ctx.store is not None:
                try:
                    await put_result(ctx.store, digest, entry.output)
                except Exception as exc:  # the marker stands; recall reads the transcript
                    log.warning("archiving the result of %s failed: %s", entry.call_id, exc)
            record = OffloadRecord(entry.output[: self.preview_chars], len(entry.output), digest)
            ctx.state.offloaded[entry.call_id] = record
            tokens -= _saving(ctx, entry, offload_marker(record))
            decided = True
        return decided


class ClearToolResults:
    """Show older tool results as a one-line marker, oldest first, until under the target.

    The newest ``keep_last`` results (1 after an overflow) and outputs of ``min_chars`` or
    fewer (any after an overflow; results with images or files always count) stay.
    ``clear_at_least_tokens`` keeps clearing past the target until that many tokens are
    freed, so a burst (which changes the cached prefix) is worth its cost.
    """

    name = "clear"

    def __init__(
        self,
        *,
        keep_last: int = 3,
        min_chars: int = 200,
        clear_at_least_tokens: int | None = None,
    ) -> None:
        if keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {keep_last}")
        if min_chars < 0:
            raise ValueError(f"min_chars must be >= 0, got {min_chars}")
        self.keep_last, self.min_chars = keep_last, min_chars
        self.clear_at_least_tokens = clear_at_least_tokens

    async def plan(self, body: list[TranscriptEntry], ctx: StageContext) -> bool:
        keep_last = 1 if ctx.aggressive else self.keep_last
        min_chars = 0 if ctx.aggressive else self.min_chars
        at_least = self.clear_at_least_tokens or 0
        found = _candidates(body, ctx.state)
        tokens, freed, decided = ctx.current_tokens, 0, False
        for n, i in enumerate(found):
            if tokens <= ctx.budget.target_tokens and freed >= at_least:
                break
            entry = body[i]
            assert isinstance(entry, ToolResultEntry)
            protected = n >= len(found) - keep_last or i >= ctx.protected_from
            if ctx.state.decided(entry.call_id):
                continue
            if len(entry.output) <= min_chars and not entry.parts:
                continue
            if not _may_touch(ctx, entry, protected):
                continue
            ctx.state.cleared.add(entry.call_id)
            saved = _saving(ctx, entry, clear_marker(entry.call_id, len(entry.output)))
            tokens, freed, decided = tokens - saved, freed + saved, True
        return decided


def _window_of(provider: Any) -> int | None:
    """The window a provider reports through ``context_window()``, if it has one."""
    method = getattr(provider, "context_window", None)
    try:
        value = method() if callable(method) else None
    except Exception:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class SummarizeHistory:
    """Fold the span between the summary so far and the protected tail into the summary.

    The span is sent as the view shows it (markers, not cleared outputs), in chunks of at
    most half of what the usable window leaves beside the running summary, each ending
    where no tool call is cut from its result; every chunk folded is kept even when a
    later one fails. A summary is refused (counted as a failure) when empty, longer than
    ``max_summary_chars``, or over a quarter of the usable window. After ``max_failures``
    failures in a row only an overflow tries again. Unless the view was refused, the
    summary is skipped when it would save less than ``min_savings_ratio`` of the view.
    """

    name = "summary"

    def __init__(
        self,
        *,
        summarizer: Any = None,
        min_savings_ratio: float = 0.10,
        max_failures: int = 3,
        max_summary_chars: int | None = 16_000,
    ) -> None:
        if not 0 <= min_savings_ratio < 1:
            raise ValueError(f"min_savings_ratio must be in [0, 1), got {min_savings_ratio}")
        if max_failures < 1:
            raise ValueError(f"max_failures must be >= 1, got {max_failures}")
        if max_summary_chars is not None and max_summary_chars < 1:
            raise ValueError(f"max_summary_chars must be >= 1, got {max_summary_chars}")
        self.summarizer = summarizer if summarizer is not None else LLMSummarizer()
        self.min_savings_ratio = min_savings_ratio
        self.max_failures = max_failures
        self.max_summary_chars = max_summary_chars

    def _usable(self, ctx: StageContext) -> int:
        usable = ctx.budget.usable
        reserve = ctx.budget.reserve_output
        for window in (ctx.model_window, _window_of(getattr(self.summarizer, "provider", None))):
            if window is not None:
                usable = min(usable, usable_tokens(window, reserve))
        return usable

    async def plan(self, body: list[TranscriptEntry], ctx: StageContext) -> bool:
        state = ctx.state
        if state.summary_failures >= self.max_failures and not ctx.aggressive:
            log.warning("summaries failed %d times; not trying again", state.summary_failures)
            return False
        usable = self._usable(ctx)

        def fits(text: str) -> bool:
            if self.max_summary_chars is not None and len(text) > self.max_summary_chars:
                return False
            return ctx.calibrated(ctx.counter.count_text(text)) <= usable // 4

        prior = state.summary
        if prior is not None and not fits(prior.text):
            prior = None  # too big for this window: cover the prefix again from the start
        start = prior.covered if prior is not None else 0
        stop = ctx.protected_from
        if stop <= start:
            return False
        span = [shown(e, state) for e in body[start:stop]]
        growth = max(256, ctx.counter.count_text(prior.text) if prior is not None else 512)
        saving = ctx.calibrated(ctx.counter.count(span)) - growth
        if not ctx.aggressive and saving < self.min_savings_ratio * ctx.current_tokens:
            return False
        return await self._fold(body, ctx, span, start, prior, usable, fits)

    async def _fold(
        self,
        body: list[TranscriptEntry],
        ctx: StageContext,
        span: list[TranscriptEntry],
        start: int,
        prior: SummaryState | None,
        usable: int,
        fits: Any,
    ) -> bool:
        state = ctx.state
        safe = pair_safe_cuts(span)
        running = prior.text if prior is not None else None
        folded, lo = False, 0
        while lo < len(span):
            carried = ctx.calibrated(ctx.counter.count_text(running)) if running else 0
            hi = _chunk_end(span, safe, lo, max(1, (usable - carried) // 2), ctx)
            try:
                text = await self.summarizer.summarize(
                    span[lo:hi], req=ctx.request, prior_summary=running
                )
                text = str(text or "")
                if not text.strip() or not fits(text):
                    raise ValueError(f"unusable summary ({len(text)} characters)")
            except Exception as exc:  # never replaces the run's own error
                state.summary_failures += 1
                log.warning("the summary failed (%s); %d failures", exc, state.summary_failures)
                return folded
            covered = start + hi
            state.summary = SummaryState(text, covered, fingerprint(body[:covered]))
            state.summary_failures = 0
            running, folded, lo = text, True, hi
        return folded


def _chunk_end(
    span: list[TranscriptEntry], safe: list[bool], lo: int, cap: int, ctx: StageContext
) -> int:
    """Where the chunk from ``lo`` ends: the last safe cut within ``cap`` tokens, or the
    first safe cut after ``lo`` when even that is over ``cap``."""
    acc, fit, end = 0, 0, lo
    while end < len(span):
        acc += ctx.calibrated(ctx.counter.count_entry(span[end]))
        end += 1
        if safe[end]:
            if acc > cap:
                break
            fit = end
    return fit or end
