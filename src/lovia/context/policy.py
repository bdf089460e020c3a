"""The ``ContextPolicy`` protocol: turn the transcript into the view one model call sees.

A policy changes only the view, never the transcript or the session. A policy is what
lovia 0.9.119 documents: ``async compact(CompactionRequest) -> ContextResult``, plus an
optional ``tools()``. A policy may instead (or also) have ``async prepare(ContextRequest)
-> ContextView``, which the run loop then prefers (``Compaction`` has both).

Whatever a policy must remember between calls lives in a JSON-safe dict (``state`` /
``scratch``): the loop stores it in the checkpoint head after every step and in the session
segment's ``meta["context_state"]`` when the run completes, and hands it back on the next
call, run or resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import UserError
from ..transcript import TranscriptEntry, leading_system_count
from ..usage import Usage
from .tokens import entry_tokens

if TYPE_CHECKING:
    from ..events import ContextCompacted
    from ..providers.base import Provider
    from ..tools import Tool

__all__ = [
    "CompactionRequest",
    "ContextPolicy",
    "ContextRequest",
    "ContextResult",
    "ContextView",
    "NoopContextPolicy",
    "compact_via",
    "policy_tools",
    "prepare_view",
    "shrank_enough",
]


@dataclass
class CompactionRequest:
    """What ``compact`` is given for one model call (lovia 0.9.119's request)."""

    entries: list[TranscriptEntry]
    """The whole transcript; read it, never change it."""
    provider: Provider | None = None
    """The provider of the coming model call."""
    model: str | None = None
    """Its model name, when known."""
    tools: Sequence[Tool] = ()
    """The tools whose schemas go with the call."""
    last_input_tokens: int | None = None
    """Input tokens the provider reported for the previous call of this run, if any."""
    overflow: bool = False
    """True after the provider refused the previous view as too long."""
    reported_window: int | None = None
    """The window the provider named when it refused the view, if it named one."""
    scratch: dict[str, Any] = field(default_factory=dict)
    """The policy's own JSON-safe state; change it in place, the run keeps it."""
    usage: Usage = field(default_factory=Usage)
    """Add the usage of any model call the policy makes; the run counts it."""


@dataclass
class ContextResult:
    """What ``compact`` returns: the view, and what was done to get it."""

    entries: list[TranscriptEntry]
    """The entries the model sees on this call."""
    changed: bool = False
    """True when ``entries`` is not the transcript as given."""
    compacted: bool = False
    """True when this call made new decisions (the run then emits ``ContextCompacted``)."""
    reason: str | None = None
    summary: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ContextRequest:
    """Everything a ``prepare`` policy may look at for one model call."""

    entries: Sequence[TranscriptEntry]
    """The whole transcript: system entry (if any), session history, this run's entries."""
    state: dict[str, Any]
    """The state the policy returned last time (``{}`` at first, or after a rewind)."""
    provider: Provider
    """The run's provider, for a policy that summarizes with a model call."""
    reported_input_tokens: int | None = None
    """Input tokens the provider reported for the previous call of this run, if any."""
    attempt: int = 0
    """0 normally; 1 after the provider refused the previous view as too long."""
    tools: Sequence[Tool] = ()
    """The tools whose schemas go with the call."""
    reported_window: int | None = None
    """The window the provider named when it refused the previous view, if it named one."""
    model: str | None = None
    """The model name, when it is not the provider's ``model``."""


@dataclass(frozen=True)
class ContextView:
    """What a ``prepare`` policy decided for this call."""

    entries: list[TranscriptEntry]
    state: dict[str, Any] = field(default_factory=dict)
    compacted: ContextCompacted | None = None
    usage: Usage | None = None
    """The usage of model calls the policy made itself (e.g. a summary), if any."""
    claimed_tokens: int | None = None
    """A ``compact(req)`` policy's own estimate of the view (its ``tokens_after``), which
    ``worth_retrying`` believes after an overflow, as lovia 0.9.119 did."""


@runtime_checkable
class ContextPolicy(Protocol):
    """Decides the view of each model call. An optional ``tools()`` may add tools."""

    async def compact(self, req: CompactionRequest) -> ContextResult: ...


class NoopContextPolicy:
    """Send the whole transcript every time; no extra tools, no state."""

    name = "noop"

    def tools(self) -> Sequence[Tool]:
        return ()

    async def compact(self, req: CompactionRequest) -> ContextResult:
        return ContextResult(entries=req.entries)

    async def prepare(self, request: ContextRequest) -> ContextView:
        return ContextView(list(request.entries), request.state)


_REPLAY = "sticky_replay"


class _Preparer(Protocol):
    async def prepare(self, request: ContextRequest) -> ContextView: ...


async def compact_via(policy: _Preparer, req: CompactionRequest) -> ContextResult:
    """Answer a 0.9.119 ``compact`` call with ``policy.prepare``; its state goes to scratch."""
    view = await policy.prepare(
        ContextRequest(
            entries=req.entries,
            state=dict(req.scratch),
            provider=req.provider,  # type: ignore[arg-type]  # a summary needs one
            reported_input_tokens=req.last_input_tokens,
            attempt=int(req.overflow),
            tools=req.tools,
            reported_window=req.reported_window,
            model=req.model,
        )
    )
    req.scratch.clear()
    req.scratch.update(view.state)
    if view.usage is not None:
        req.usage.add(view.usage)
    given = req.entries
    changed = len(view.entries) != len(given) or any(
        a is not b for a, b in zip(view.entries, given, strict=True)
    )
    notice = view.compacted.notice if view.compacted is not None else None
    if notice is None:  # a view made from earlier decisions only
        return ContextResult(
            entries=view.entries, changed=changed, reason=_REPLAY if changed else None
        )
    return ContextResult(
        entries=view.entries,
        changed=changed,
        compacted=True,
        reason=notice.reason,
        summary=notice.summary,
        tokens_before=notice.tokens_before,
        tokens_after=notice.tokens_after,
        detail=list(notice.detail),
    )


def shrank_enough(refused: Sequence[TranscriptEntry], view: Sequence[TranscriptEntry]) -> bool:
    """Whether ``view`` is clearly (5% or more, by the estimate) smaller than the ``refused``
    one: a retry of a view about as big would be refused again, and paid for."""
    before = sum(entry_tokens(e) for e in refused)
    return sum(entry_tokens(e) for e in view) <= before * 0.95


def worth_retrying(
    refused: Sequence[TranscriptEntry], refused_claim: int | None, view: ContextView
) -> bool:
    """Whether to send ``view`` after the provider refused the ``refused`` view as too long:
    when it is clearly smaller. A ``compact(req)`` policy that gave ``tokens_after`` for
    both views and says it compacted is taken at its word, as in 0.9.119 (its estimate may
    count what this one cannot); other views are measured (``shrank_enough``)."""
    claim = view.claimed_tokens
    if view.compacted is not None and claim is not None and refused_claim is not None:
        return claim < refused_claim * 0.95
    return shrank_enough(refused, view.entries)


def policy_tools(policy: Any) -> Sequence[Tool]:
    """The tools ``policy`` contributes (none when it has no ``tools()``)."""
    method = getattr(policy, "tools", None)
    return tuple(method()) if callable(method) else ()


async def prepare_view(policy: Any, request: ContextRequest) -> ContextView:
    """Ask ``policy`` for the view of one call, through ``prepare`` or ``compact``."""
    prepare = getattr(policy, "prepare", None)
    if callable(prepare):
        view: ContextView = await prepare(request)
        return view
    from ..events import CompactionNotice, ContextCompacted

    compact = getattr(policy, "compact", None)
    if not callable(compact):
        raise UserError(
            f"{type(policy).__name__} is not a context policy",
            hint="give it an async compact(req) -> ContextResult method",
        )
    req = CompactionRequest(
        entries=list(request.entries),
        provider=request.provider,
        model=request.model or getattr(request.provider, "model", None),
        tools=request.tools,
        last_input_tokens=request.reported_input_tokens,
        overflow=bool(request.attempt),
        reported_window=request.reported_window,
        scratch=dict(request.state),
    )
    result = await compact(req)
    if not isinstance(result, ContextResult):
        raise UserError(
            f"{type(policy).__name__}.compact returned {type(result).__name__}",
            hint="return ContextResult(entries=...) from compact()",
        )
    event = None
    if result.compacted:
        notice = CompactionNotice(
            reason=result.reason or ("reactive" if req.overflow else "compacted"),
            reactive=req.overflow,
            summary=result.summary,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            detail=list(result.detail),
        )
        event = ContextCompacted(
            entries_before=list(request.entries), entries_after=list(result.entries), notice=notice
        )
    used = req.usage if req.usage.total_tokens or req.usage.cache_write_tokens else None
    # Unchanged means the transcript as given, whatever the policy did to its copy of the list.
    shown = result.entries if result.changed or result.compacted else request.entries
    return ContextView(
        _with_system(request.entries, shown),
        req.scratch,
        event,
        used,
        claimed_tokens=result.tokens_after,
    )


def _with_system(
    given: Sequence[TranscriptEntry], view: Sequence[TranscriptEntry]
) -> list[TranscriptEntry]:
    """``view``, opened by the transcript's system entries again if the policy dropped them:
    the instructions rendered for this run stay the same on every call."""
    n = leading_system_count(given)
    if n and leading_system_count(view) == 0:
        return [*given[:n], *view]
    return list(view)
