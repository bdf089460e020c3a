"""``Compaction(stages=[...])``: the policy's budget, tail and notice around your stages.

The policy sizes the view as it always does (the window, ``compact_at`` / ``compact_to``,
the ratio the provider's reported usage taught, the halving after a refused view), and
hands the stages a ``StageContext``. Their decisions are a ``CompactionState``, kept in the
state under the key lovia 0.9.119 used, so the default policy (``stages=None``) takes them
over when a program goes back to it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..errors import UserError
from ..events import CompactionNotice, ContextCompacted
from ..transcript import TranscriptEntry, leading_system_count
from ..usage import Usage
from .decisions import carried_ratio
from .policy import CompactionRequest, ContextRequest, ContextView
from .render import pair_safe_cuts, protected_tail_start, render_body, shown, summary_holds
from .results import ResultStore
from .stages import Stage, StageContext
from .state import CompactionState, SummaryState, fingerprint, unique_result_ids, window_key
from .tokens import InvalidBudget, TokenBudget, TokenCounter

__all__ = [
    "CompactionSettings",
    "check_settings",
    "checked_stages",
    "refused_window",
    "run_stages",
]

log = logging.getLogger("lovia.context.compaction")

_AGGRESSIVE_TAIL = 0.10  # of the usable window, after a refused view
_TAIL = 0.20  # of the usable window, unless keep_recent_tokens says otherwise


class CompactionSettings(Protocol):
    """What the pipeline reads of its ``Compaction``: the window and the budget around it,
    and where offloaded outputs go (the policy hands itself over)."""

    context_window: int | None
    compact_at: int | float
    compact_to: int | float
    keep_recent_tokens: int | None
    reserve_output_tokens: int
    image_tokens: int
    store: ResultStore | None


def _load(request: ContextRequest, body: Sequence[TranscriptEntry]) -> CompactionState:
    state = CompactionState.load(request.state)
    state.prune(unique_result_ids(body))
    if state.summary is not None and not summary_holds(body, state):
        state.summary = None  # the prefix was rewritten: the id-keyed decisions stay
    s = state.summary
    if s is not None:
        safe = pair_safe_cuts(body)
        if not safe[s.covered]:  # the view would open with a result cut from its call
            cut = max((i for i in range(1, s.covered) if safe[i]), default=0)
            s = SummaryState(s.text, cut, fingerprint(body[:cut])) if cut else None
            state.summary = s
    return state


def refused_window(configured: int | None, request: ContextRequest) -> int | None:
    """``configured``, capped by the window the provider named when it refused the view."""
    named = request.reported_window if request.attempt else None
    if not named:
        return configured
    log.info("the provider refused the view: learned %d tokens for this model", named)
    return min(named, configured) if configured else named


def _model(request: ContextRequest) -> str | None:
    return request.model or getattr(request.provider, "model", None)


def _window(
    policy: CompactionSettings, request: ContextRequest, state: CompactionState
) -> int | None:
    """``refused_window``, and any window learned that way earlier in this state."""
    key = window_key(request.provider, _model(request))
    window = refused_window(policy.context_window, request)
    if request.attempt and request.reported_window:
        state.learned_windows[key] = request.reported_window
    learned = state.learned_windows.get(key)
    windows = [w for w in (window, learned) if w]
    return min(windows) if windows else None


async def run_stages(
    policy: CompactionSettings, stages: Sequence[Stage], request: ContextRequest
) -> ContextView:
    """One call's view under ``stages``, the decisions made for it, and its notice."""
    entries = request.entries
    n = leading_system_count(entries)
    system, body = list(entries[:n]), list(entries[n:])
    state = _load(request, body)
    ratio = carried_ratio({"ratio": state.ratio, "sent": state.last_view_estimate}, request)
    state.ratio = ratio
    counter = TokenCounter(image_tokens=policy.image_tokens)
    fixed = counter.count(system) + counter.count_tools(request.tools)

    def measure() -> int:
        return int((fixed + counter.count(render_body(body, state))) * ratio)

    before = measure()
    window = _window(policy, request, state)
    budget = _budget(policy, window, before, bool(request.attempt))
    names: list[str] = []
    usage = Usage()
    if budget is not None and (request.attempt or before > budget.trigger_tokens):
        share = _AGGRESSIVE_TAIL if request.attempt else _TAIL
        tail = policy.keep_recent_tokens
        if tail is None or request.attempt:
            tail = int(budget.usable * share)
        ctx = StageContext(
            request=CompactionRequest(
                entries=list(entries),
                provider=request.provider,
                model=_model(request),
                tools=request.tools,
                last_input_tokens=request.reported_input_tokens,
                overflow=bool(request.attempt),
                reported_window=request.reported_window,
                usage=usage,
            ),
            state=state,
            counter=counter,
            budget=budget,
            current_tokens=before,
            protected_from=_tail(body, state, counter, ratio, max(tail, 1)),
            aggressive=bool(request.attempt),
            store=policy.store,
            model_window=window,
        )
        await _plan(stages, body, ctx, names, measure)
    rendered = render_body(body, state)
    after = int((fixed + counter.count(rendered)) * ratio)
    state.last_view_estimate = int(after / ratio)
    saved: dict[str, Any] = {}
    state.save(saved)
    view = [*system, *rendered]
    used = usage if usage.total_tokens or usage.cache_write_tokens else None
    if not names:
        return ContextView(view, saved, None, used)
    reason = ("reactive_" if request.attempt else "") + "+".join(names)
    line = (
        f"Context compacted{' after an overflow' if request.attempt else ''} by "
        f"{', '.join(names)}; about {before} -> {after} tokens. The transcript is unchanged."
    )
    notice = CompactionNotice(
        reason=reason,
        reactive=bool(request.attempt),
        summary=state.summary.text if "summary" in names and state.summary else None,
        tokens_before=before,
        tokens_after=after,
        detail=[line],
    )
    event = ContextCompacted(entries_before=list(entries), entries_after=view, notice=notice)
    return ContextView(view, saved, event, used)


def _tail(
    body: list[TranscriptEntry], state: CompactionState, c: TokenCounter, ratio: float, tail: int
) -> int:
    """Where the protected tail starts, measured on the entries as the view shows them."""
    start = protected_tail_start([shown(e, state) for e in body], c, ratio, tail)
    if body and start <= (state.summary.covered if state.summary else 0):
        log.warning(
            "the protected tail covers the entire view: no stage can compact anything; "
            "lower keep_recent_tokens or raise context_window"
        )
    return start


def _budget(
    policy: CompactionSettings, window: int | None, estimate: int, attempt: bool
) -> TokenBudget | None:
    """This call's budget: the policy's own watermarks, or after a refused view a target
    of a quarter of the usable window (half the refused view when no window is known)."""
    reserve = policy.reserve_output_tokens
    if window is None:
        if not attempt:
            return None
        return TokenBudget(max(estimate, 2), 0, max(estimate, 2), max(estimate // 2, 1))
    if attempt:
        usable = TokenBudget(window, reserve).usable
        target = max(min(usable // 4, estimate // 2), 1)
        return TokenBudget(window, reserve, max(target + 1, 2), target)
    return TokenBudget(window, reserve, policy.compact_at, policy.compact_to)


async def _plan(
    stages: Sequence[Stage],
    body: list[TranscriptEntry],
    ctx: StageContext,
    names: list[str],
    measure: Callable[[], int],
) -> None:
    for stage in stages:
        if ctx.current_tokens <= ctx.budget.target_tokens:
            break
        name = str(getattr(stage, "name", None) or type(stage).__name__)
        mark = _mark(ctx.state)
        try:
            decided = await stage.plan(body, ctx)
        except Exception as exc:  # what was decided before stays; the run goes on
            log.warning("context stage %r failed: %s", name, exc)
            decided = _mark(ctx.state) != mark
        if decided:
            if name not in names:
                names.append(name)
            ctx.current_tokens = measure()


def _mark(state: CompactionState) -> tuple[Any, ...]:
    s = state.summary
    return (len(state.cleared), len(state.offloaded), s and (s.covered, s.text))


def checked_stages(stages: Sequence[Stage]) -> list[Stage]:
    for stage in stages:
        if not callable(getattr(stage, "plan", None)):
            raise UserError(
                f"{type(stage).__name__} is not a compaction stage",
                hint="a stage has a name and an async plan(body, ctx) -> bool method",
            )
    return list(stages)


def check_settings(
    window: int | None, at: int | float, to: int | float, keep: int | None, reserve: int
) -> None:
    """Refuse impossible ``Compaction`` settings, naming the argument that is wrong."""
    for name, value in (("context_window", window), ("keep_recent_tokens", keep)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidBudget(f"{name} must be an int, got {value!r}", hint=f"e.g. {name}=None")
        if value is not None and value < 1:
            raise InvalidBudget(
                f"{name} must be >= 1 token, got {value}", hint=f"leave {name}=None for the default"
            )
    if reserve < 0:
        raise InvalidBudget(
            f"reserve_output_tokens must be >= 0, got {reserve}",
            hint="the tokens kept free for the reply, e.g. 16_384",
        )
    try:  # a window too small for the reserve is halved instead; no window: a stand-in
        TokenBudget(window if window is not None else 1 << 30, reserve, at, to)
    except InvalidBudget as exc:
        text = str(exc.args[0] if exc.args else exc)
        text = text.replace("trigger", "compact_at").replace("target", "compact_to")
        raise InvalidBudget(text, hint=exc.hint) from None
