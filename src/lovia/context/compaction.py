"""``Compaction``: the default context policy.

It shrinks what the model sees when the transcript nears the context window, and never
touches the transcript or the session. Steps, cheapest first: offload huge tool results
(>= 4,000 characters) to a preview marker; clear older tool results to a one-line marker;
summarize the oldest span with a model call, only when the first two were not enough.
``Compaction(stages=[...])`` runs your own stages instead (``pipeline.py``).

Every marker names ``recall_tool_result("<ref>")``, the tool this policy contributes.
Decisions are sticky and monotonic (positions checked against a fingerprint of the entry
there), so the compacted prefix renders byte-identically on every later call and prompt
caches keep working; compacting from ``compact_at`` down to ``compact_to`` makes it rare.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ..events import CompactionNotice, ContextCompacted
from ..transcript import ToolResultEntry, TranscriptEntry
from ..usage import Usage
from ._render import (
    Info,
    info_for,
    leading_system,
    protected_start,
    starts_block,
)
from .decisions import Decisions, carried_ratio, dump_decisions, load_decisions
from .pipeline import check_settings, checked_stages, refused_window, run_stages
from .policy import CompactionRequest, ContextRequest, ContextResult, ContextView, compact_via
from .recall import is_trimmed, make_recall_tool
from .results import ResultStore, put_result, remember_call
from .stages import Stage
from .steps import clear_oldest, head_infos, last_user, offload_huge, shown_at
from .summarizer import Summarizer
from .summary import summarize
from .tokens import IMAGE_TOKENS, TokenBudget, TokenCounter

if TYPE_CHECKING:
    from ..providers.base import Provider
    from ..tools import Tool

__all__ = ["Compaction", "Summarizer", "SummarizerLike"]

log = logging.getLogger("lovia.context")

SummarizerLike = Union[
    Summarizer,
    "Provider",
    Callable[[list[TranscriptEntry]], Union[str, Awaitable[str]]],  # noqa: UP007
]
"""What ``Compaction(summarizer=...)`` takes: a ``Summarizer`` (an ``LLMSummarizer``, or any
object with its ``summarize(entries, req=..., prior_summary=...)``), a provider to summarize
with, or a callable ``(entries) -> str``."""

_MAX_ARCHIVED = 100_000  # (digest, call id) pairs remembered as archived by this instance
_MEMOS = 4  # views remembered for incremental rendering (one per concurrent run)


@dataclass(slots=True)
class _Memo:
    body: Sequence[TranscriptEntry]
    infos: list[Info]
    key: tuple[Any, ...]
    rendered: list[TranscriptEntry]
    raw: int


class Compaction:
    """Keep each model call inside the context window; the transcript stays untouched.

    ``context_window=None`` (the default) means the window is unknown: nothing is compacted
    until the provider refuses a view as too long, and then the view is halved once. Set it
    to your model's window to compact ahead of time. With a ``store``, every tool result is
    archived when first seen, so ``session.trim_tool_results`` later loses nothing.
    """

    name = "compaction"  # as 0.9.119's policy names itself

    def __init__(
        self,
        context_window: int | None = None,
        compact_at: int | float = 0.85,
        compact_to: int | float = 0.60,
        keep_recent_tokens: int | None = None,
        reserve_output_tokens: int = 16_384,
        store: ResultStore | None = None,
        summarizer: SummarizerLike | None = None,
        image_tokens: int = IMAGE_TOKENS,
        stages: Sequence[Stage] | None = None,
    ) -> None:
        check_settings(
            context_window, compact_at, compact_to, keep_recent_tokens, reserve_output_tokens
        )
        self.context_window = context_window
        self.compact_at = compact_at
        self.compact_to = compact_to
        self.keep_recent_tokens = keep_recent_tokens
        self.reserve_output_tokens = reserve_output_tokens
        self.store = store
        self.summarizer = summarizer
        self.image_tokens = image_tokens  # the flat estimate per image part
        # Your own stages (see ``lovia.context.stages``) instead of the built-in steps.
        self.stages: list[Stage] | None = None if stages is None else checked_stages(stages)
        # The policy always offers recall, as lovia 0.9.119's does: any marker it renders
        # (ahead of time, or after an overflow with an unknown window) has a tool behind it.
        self._recall: Tool | None = make_recall_tool(store)
        # Only small, content-derived data is kept between calls: the last few views (for
        # incremental rendering) and which outputs this instance has archived already.
        self._archived: dict[tuple[str, str], None] = {}
        self._memos: list[_Memo] = []
        self._schemas = TokenCounter()  # the tool schemas sent with every call count too

    def tools(self) -> Sequence[Tool]:
        """``recall_tool_result``, so the model can reopen what a marker stands for."""
        return (self._recall,) if self._recall is not None else ()

    async def compact(self, req: CompactionRequest) -> ContextResult:
        """lovia 0.9.119's entry point: the view for ``req``; the state goes to ``req.scratch``."""
        return await compact_via(self, req)

    async def prepare(self, request: ContextRequest) -> ContextView:
        """Render this call's view, compacting first when the estimate is over budget."""
        if self.stages is not None:
            if self.store is not None:  # your stages may offload; trims need every output
                await self._archive(self._unarchived(request.entries))
            return await run_stages(self, self.stages, request)
        entries = request.entries
        sys_n = leading_system(entries)
        system, body = list(entries[:sys_n]), entries[sys_n:]
        state = request.state if isinstance(request.state, dict) else {}
        ratio = carried_ratio(state, request)
        decisions = load_decisions(state, body)
        if self.context_window is None and self.store is None and not request.attempt:
            if decisions.empty():  # unknown window, nothing decided, nothing to archive
                return ContextView(list(entries), dict(state))
        pending: list[Info] = []
        memo = self._memo_for(body)
        infos = self._body_infos(body, memo, pending)
        if pending:
            await self._archive(pending)
        sys_raw = sum(i.tokens for i in self._system_infos(system))
        sys_raw += self._schemas.count_tools(request.tools)
        rendered, raw = self._render(infos, decisions, memo)
        compacted: ContextCompacted | None = None
        spent = Usage()  # the summary's model calls
        budget = self._budget((sys_raw + raw) * ratio, request)
        if budget is not None and self._should_compact(
            decisions, infos, sys_raw + raw, ratio, budget
        ):
            compacted = await self._compact(
                request, infos, decisions, sys_raw, raw, ratio, budget[1], spent
            )
            if compacted is not None:
                rendered, raw = self._render(infos, decisions, None)
            over = (sys_raw + raw) * ratio > budget[0]
            decisions.hold = self._protected(infos, budget, ratio) if over else 0
        self._remember(body, infos, decisions, rendered, raw)
        new_state = dump_decisions(decisions, body, ratio, sys_raw + raw)
        view = [*system, *rendered]
        if compacted is not None:
            compacted.entries_after = list(view)
        used = spent if spent.total_tokens or spent.cache_write_tokens else None
        return ContextView(view, new_state, compacted, used)

    # -- budget and decisions ------------------------------------------------------------

    def _budget(self, estimate: float, request: ContextRequest) -> tuple[float, float] | None:
        """``(compact when above, compact down to)`` in tokens, or ``None`` for "leave it"."""
        attempt = request.attempt
        window = refused_window(self.context_window, request)  # the window a refusal named
        if window is None:
            if not attempt:
                return None
            return 0.0, estimate / 2  # unknown window, refused view: halve it once
        b = TokenBudget(window, self.reserve_output_tokens, self.compact_at, self.compact_to)
        if attempt:
            return 0.0, min(b.target_tokens, estimate) / 2
        return float(b.trigger_tokens), float(b.target_tokens)

    def _should_compact(
        self,
        d: Decisions,
        infos: list[Info],
        raw: int,
        ratio: float,
        budget: tuple[float, float],
    ) -> bool:
        if raw * ratio <= budget[0]:
            return False
        if budget[0] == 0.0 or not d.hold:
            return True
        # Compaction fell short last time: only a tail that moved on frees anything new.
        return self._protected(infos, budget, ratio) > d.hold

    def _protected(self, infos: list[Info], budget: tuple[float, float], ratio: float) -> int:
        return protected_start(infos, self._keep_recent(budget[1]) / ratio)

    def _keep_recent(self, target: float) -> float:
        if self.keep_recent_tokens is not None:
            return float(self.keep_recent_tokens)
        return target / 2

    async def _compact(
        self,
        request: ContextRequest,
        infos: list[Info],
        d: Decisions,
        sys_raw: int,
        raw: int,
        ratio: float,
        target: float,
        spent: Usage,
    ) -> ContextCompacted | None:
        before = (sys_raw + raw) * ratio
        goal = target / ratio - sys_raw  # what the body may cost, in raw tokens
        prot = self._protected(infos, (0.0, target), ratio)
        if prot == 0 and infos and self.keep_recent_tokens is not None:
            log.warning(  # a setting that fences everything off: said, not left to overflow
                "context: protected tail covers the entire view (keep_recent_tokens=%d, "
                "compacting to about %d tokens); nothing can be compacted: lower "
                "keep_recent_tokens",
                self.keep_recent_tokens,
                int(target),
            )
        steps: list[str] = []
        kinds: list[str] = []  # the steps' names, as 0.9.119 reports them
        summary: str | None = None
        raw, n = offload_huge(infos, d, prot, raw, self._recall is not None)
        if n:
            steps.append(f"offloaded {n} large tool result{'s' * (n != 1)}")
            kinds.append("offload")
        if raw > goal:
            raw, n = clear_oldest(infos, d, prot, raw, goal, self._recall is not None)
            if n:
                steps.append(f"cleared {n} older tool result{'s' * (n != 1)}")
                kinds.append("clear")
        if raw > goal:
            raw, n = await self._summarize_oldest(request, infos, d, prot, raw, goal, spent)
            if n:
                steps.append(f"summarized {n} earlier entries")
                summary = d.summary
                kinds.append("summary")
        if raw > goal and request.attempt:  # refused: a result too big alone loses its shelter
            raw, n = offload_huge(infos, d, len(infos), raw, self._recall is not None, prot, goal)
            if n:
                steps.append(f"offloaded {n} recent tool result{'s' * (n != 1)} too big to keep")
                kinds += [] if "offload" in kinds else ["offload"]
        if not steps:
            log.debug("context over budget but nothing outside the protected tail to compact")
            return None
        after = (sys_raw + raw) * ratio
        reason = ("reactive_" if request.attempt else "") + "+".join(kinds)
        line = (
            f"Context compacted{' after an overflow' if request.attempt else ''}: "
            f"{', '.join(steps)}; about {int(before)} -> "
            f"{int(after)} tokens. The transcript is unchanged."
        )
        notice = CompactionNotice(
            reason=reason,
            reactive=bool(request.attempt),
            summary=summary,
            tokens_before=int(before),
            tokens_after=int(after),
            detail=[line],
        )
        return ContextCompacted(entries_before=list(request.entries), notice=notice)

    async def _summarize_oldest(
        self,
        request: ContextRequest,
        infos: list[Info],
        d: Decisions,
        prot: int,
        raw: int,
        goal: float,
        spent: Usage,
    ) -> tuple[int, int]:
        """Replace the oldest whole turns with one summary; returns (raw tokens, entries)."""
        limit = prot
        start = d.summary_upto
        saved = 0
        upto = start
        for i in range(start, limit):
            if i > start and starts_block(infos, i):
                upto = i
                if raw - saved <= goal:
                    break
            saved += shown_at(infos, d, i, self._recall is not None).tokens
        else:
            upto = limit  # the limit is always a turn boundary
        # Only the latest user message stays verbatim: when a later one follows the span, the
        # span's own user messages (an earlier kept one included) go into the summary.
        later = last_user(infos, upto, len(infos)) >= 0
        kept = -1 if later else last_user(infos, start, upto)
        if upto - start <= (kept >= 0):  # nothing to summarize but the message we keep
            return raw, 0
        recall = self._recall is not None
        span = [i.entry for i in head_infos(infos, d)]
        span += [shown_at(infos, d, i, recall).entry for i in range(start, upto)]
        try:
            prior = d.summary or None
            text = await summarize(
                request.provider, self.summarizer, span, prior=prior, usage=spent
            )
        except Exception as exc:  # a failed summary must not fail the run
            log.warning("the summary failed (%s); the span was left as it was", exc)
            return raw, 0
        if not text:
            log.warning("the summarizer returned no text; the span was left as it was")
            return raw, 0
        d.summary_upto, d.summary = upto, text
        d.summary_kept = kept if kept >= 0 or later else d.summary_kept
        return self._render(infos, d, None)[1], upto - start

    # -- rendering -----------------------------------------------------------------------

    def _render(
        self, infos: list[Info], d: Decisions, memo: _Memo | None
    ) -> tuple[list[TranscriptEntry], int]:
        """The body as the model sees it under ``d``, and its raw token estimate."""
        if memo is not None and memo.key == d.key():
            start, out, raw = len(memo.infos), list(memo.rendered), memo.raw
        else:
            start, out, raw = d.summary_upto, [], 0
            for head in head_infos(infos, d):
                out.append(head.entry)
                raw += head.tokens
        for i in range(start, len(infos)):
            info = shown_at(infos, d, i, self._recall is not None)
            out.append(info.entry)
            raw += info.tokens
        return out, raw

    def _body_infos(
        self, body: Sequence[TranscriptEntry], memo: _Memo | None, pending: list[Info]
    ) -> list[Info]:
        start = len(memo.infos) if memo is not None else 0
        infos = list(memo.infos) if memo is not None else []
        archive = self.store is not None
        for e in body[start:]:
            info = info_for(e, self.image_tokens)
            if archive and isinstance(e, ToolResultEntry):
                if (info.digest(), e.call_id) not in self._archived:
                    pending.append(info)
            infos.append(info)
        return infos

    def _unarchived(self, entries: Sequence[TranscriptEntry]) -> list[Info]:
        """The tool results in ``entries`` this instance has not archived yet."""
        pending = []
        for e in entries:
            if isinstance(e, ToolResultEntry):
                info = info_for(e, self.image_tokens)
                if (info.digest(), e.call_id) not in self._archived:
                    pending.append(info)
        return pending

    def _system_infos(self, system: list[TranscriptEntry]) -> list[Info]:
        return [info_for(e, self.image_tokens) for e in system]

    async def _archive(self, pending: list[Info]) -> None:
        store = self.store
        assert store is not None
        if not pending:
            return
        try:
            await _archive_all(store, pending)
        except Exception as exc:  # the view does not need the archive; try again next call
            log.warning("archiving tool results failed (%s); recall uses the transcript", exc)
            return
        archived = self._archived
        for info in pending:
            assert isinstance(info.entry, ToolResultEntry)
            archived[(info.digest(), info.entry.call_id)] = None
        if len(archived) > _MAX_ARCHIVED:  # forget the older half; a re-put is a no-op
            for key in list(archived)[: _MAX_ARCHIVED // 2]:
                del archived[key]

    def _memo_for(self, body: Sequence[TranscriptEntry]) -> _Memo | None:
        for memo in self._memos:
            n = len(memo.body)
            if n <= len(body) and all(map(operator.is_, memo.body, body)):
                return memo
        return None

    def _remember(
        self,
        body: Sequence[TranscriptEntry],
        infos: list[Info],
        d: Decisions,
        rendered: list[TranscriptEntry],
        raw: int,
    ) -> None:
        memo = _Memo(list(body), infos, d.key(), rendered, raw)
        self._memos = [memo, *self._memos][:_MEMOS]


async def _archive_all(store: ResultStore, infos: list[Info]) -> None:
    for info in infos:
        entry = info.entry
        assert isinstance(entry, ToolResultEntry)
        if not is_trimmed(entry.output):  # a trimmed text is not the original
            digest = info.digest()
            await put_result(store, digest, entry.output)
            await remember_call(store, entry.call_id, digest)
