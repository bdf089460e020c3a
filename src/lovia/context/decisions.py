"""What ``Compaction`` decided so far, and how it is carried in ``state`` (JSON-safe).

Decisions are transcript positions (after the system prompt), each checked against a
fingerprint of the entry there when loaded. The transcript is append-only between rewinds,
so a position means the same entry on every later call, run and resume; a state that does
not fit the transcript (a rewind, another session) is dropped and re-derived, never trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry
from .policy import ContextRequest
from .results import content_digest
from .state import SCRATCH_KEY, CompactionState, unique_result_ids
from .state import fingerprint as state_fingerprint

__all__ = [
    "Decisions",
    "carried_ratio",
    "dump_decisions",
    "fingerprint",
    "from_0_9_119",
    "load_decisions",
]

_STATE_VERSION = 1
_MIN_SAMPLE = 1_000  # estimated tokens below which a reported count does not move the ratio
_MIN_RATIO, _MAX_RATIO = 0.5, 3.0


@dataclass(slots=True)
class Decisions:
    """What the policy decided so far, in body positions (the transcript after the system)."""

    cleared_upto: int = 0
    cleared_ids: frozenset[str] = frozenset()  # call ids cleared by lovia 0.9.119
    offloaded: dict[str, str] = field(default_factory=dict)  # position -> digest
    summary_upto: int = 0
    summary: str = ""
    summary_kept: int = -1  # the latest user message inside the summarized span, kept verbatim
    hold: int = 0  # where the protected tail began when compaction last fell short

    def key(self) -> tuple[Any, ...]:
        return (
            self.cleared_upto,
            self.cleared_ids,
            self.summary_upto,
            self.summary,
            self.summary_kept,
            tuple(self.offloaded),
        )

    def empty(self) -> bool:
        return not (
            self.cleared_upto
            or self.cleared_ids
            or self.offloaded
            or self.summary_upto
            or self.hold
        )


def carried_ratio(state: dict[str, Any], request: ContextRequest) -> float:
    ratio = state.get("ratio")
    ratio = float(ratio) if isinstance(ratio, (int, float)) and ratio > 0 else 1.0
    sent = state.get("sent")
    reported = request.reported_input_tokens
    # Small prompts say little: a provider's fixed costs (tool schemas, framing) dominate.
    if not request.attempt and reported and isinstance(sent, int) and sent >= _MIN_SAMPLE:
        measured = min(_MAX_RATIO, max(_MIN_RATIO, reported / sent))
        ratio = (ratio + measured) / 2  # smoothed: one odd turn does not swing the budget
    return ratio


def load_decisions(state: dict[str, Any], body: Sequence[TranscriptEntry]) -> Decisions:
    """The decisions in ``state`` that still fit ``body``; anything else starts over."""
    d = Decisions()
    if state.get("v") != _STATE_VERSION:
        return from_0_9_119(state, body) if SCRATCH_KEY in state else d
    upto = state.get("cleared_upto")
    if isinstance(upto, int) and 0 < upto <= len(body):
        if state.get("cleared_anchor") == fingerprint(body[upto - 1]):
            d.cleared_upto = upto
    offloaded = state.get("offloaded")
    if isinstance(offloaded, dict):
        d.offloaded = {
            k: v
            for k, v in offloaded.items()
            if isinstance(k, str) and k.isdigit() and int(k) < len(body) and isinstance(v, str)
        }
    summary = state.get("summary")
    if isinstance(summary, dict):
        upto, text = summary.get("upto"), summary.get("text")
        if isinstance(upto, int) and 0 < upto <= len(body) and isinstance(text, str) and text:
            if summary.get("anchor") == fingerprint(body[upto - 1]):
                d.summary_upto, d.summary = upto, text
                kept = summary.get("kept")
                d.summary_kept = kept if isinstance(kept, int) and kept < upto else -1
    ids = state.get("cleared_ids")
    if isinstance(ids, list):
        unique = unique_result_ids(body)
        d.cleared_ids = frozenset(i for i in ids if isinstance(i, str) and i in unique)
    hold = state.get("hold")
    d.hold = hold if isinstance(hold, int) and hold > 0 else 0
    return d


def dump_decisions(
    d: Decisions, body: Sequence[TranscriptEntry], ratio: float, raw: int
) -> dict[str, Any]:
    state: dict[str, Any] = {"v": _STATE_VERSION, "ratio": round(ratio, 4), "sent": raw}
    if d.cleared_upto:
        state["cleared_upto"] = d.cleared_upto
        state["cleared_anchor"] = fingerprint(body[d.cleared_upto - 1])
    if d.cleared_ids:
        state["cleared_ids"] = sorted(d.cleared_ids)
    if d.offloaded:
        state["offloaded"] = d.offloaded
    if d.summary_upto:
        state["summary"] = {
            "upto": d.summary_upto,
            "anchor": fingerprint(body[d.summary_upto - 1]),
            "text": d.summary,
            "kept": d.summary_kept,
        }
    if d.hold:
        state["hold"] = d.hold
    return state


def from_0_9_119(state: dict[str, Any], body: Sequence[TranscriptEntry]) -> Decisions:
    """The decisions of a record lovia 0.9.119 wrote (``state["context"]``, version 3).

    Its cleared ids stay ids; its offloads (by call id) become positions; its summary is
    kept when the prefix it covers still has the fingerprint it recorded. Its ratio is not
    carried: it calibrated 0.9.119's estimate, not this one.
    """
    old = CompactionState.load(state)
    old.prune(unique_result_ids(body))
    d = Decisions(cleared_ids=frozenset(old.cleared))
    if old.offloaded:
        for i, e in enumerate(body):
            if isinstance(e, ToolResultEntry) and e.call_id in old.offloaded:
                if len(e.output) == old.offloaded[e.call_id].chars:
                    d.offloaded[str(i)] = content_digest(e.output)
    s = old.summary
    if s is not None and s.covered <= len(body) and s.text:
        if state_fingerprint(body[: s.covered]) == s.fingerprint:
            d.summary_upto, d.summary = s.covered, s.text
    return d


def fingerprint(entry: TranscriptEntry) -> str:
    """A cheap identity for the entry at a decision's position (type, id, size)."""
    if isinstance(entry, ToolResultEntry):
        return f"tool_result:{entry.call_id}:{len(entry.output)}"
    if isinstance(entry, InputEntry):
        return f"input:{entry.role}:{len(entry.text)}"
    if isinstance(entry, ToolCallEntry):
        return f"tool_call:{entry.call_id}:{len(entry.arguments)}"
    return f"{entry.type}:{len(entry.content)}"
