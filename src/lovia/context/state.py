"""lovia 0.9.119's record of compaction decisions, read (and writable) here.

0.9.119 keeps its decisions under ``scratch["context"]`` (``version`` 3): tool results it
cleared and offloaded, keyed by ``call_id``, its running summary with the fingerprint of the
prefix the summary covers, and its calibration ratio. A segment or checkpoint written by
0.9.119 carries that record in ``context_state``; ``Compaction`` turns it into its own
decisions (``decisions.from_0_9_119``) so the first run here shows the same markers and
summary instead of compacting from scratch. ``CompactionState`` is the record itself, for
code that reads or writes it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ..parts import TextPart
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

__all__ = [
    "RATIO_MAX",
    "RATIO_MIN",
    "SCRATCH_KEY",
    "CompactionState",
    "OffloadRecord",
    "SummaryState",
    "fingerprint",
    "result_digest",
    "unique_result_ids",
    "window_key",
]

SCRATCH_KEY = "context"
"""The scratch key 0.9.119 keeps its record under."""
RECORD_VERSION = 3
RATIO_MIN, RATIO_MAX = 0.5, 2.5
"""The bounds a loaded calibration ratio is clamped to."""
_WINDOW_MIN, _WINDOW_MAX = 1_024, 20_000_000  # a learned window outside these is noise


@dataclass
class OffloadRecord:
    """A large tool result shown as a preview: its beginning, length and content digest."""

    preview: str
    chars: int
    digest: str


@dataclass
class SummaryState:
    """The running summary and how many body entries (after the system prompt) it covers;
    ``fingerprint`` is that prefix's ``fingerprint()``, so a rewritten prefix is noticed."""

    text: str
    covered: int
    fingerprint: str


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class CompactionState:
    """What 0.9.119's compaction decided: cleared and offloaded results (by ``call_id``),
    the summary, the calibration ratio and the windows providers named when refusing."""

    cleared: set[str] = field(default_factory=set)
    offloaded: dict[str, OffloadRecord] = field(default_factory=dict)
    summary: SummaryState | None = None
    ratio: float = 1.0
    last_view_estimate: int | None = None
    summary_failures: int = 0
    learned_windows: dict[str, int] = field(default_factory=dict)

    def decided(self, call_id: str) -> bool:
        """Whether the result of ``call_id`` is cleared or offloaded."""
        return call_id in self.cleared or call_id in self.offloaded

    def prune(self, referable: set[str]) -> None:
        """Keep only the decisions about ids in ``referable`` (see ``unique_result_ids``)."""
        self.cleared &= referable
        self.offloaded = {k: v for k, v in self.offloaded.items() if k in referable}

    @classmethod
    def load(cls, scratch: dict[str, Any]) -> CompactionState:
        """The record in ``scratch``; what is missing, malformed or of another version is
        left at its default (a record of another version is ignored whole)."""
        state = cls()
        raw = scratch.get(SCRATCH_KEY) if isinstance(scratch, dict) else None
        if not isinstance(raw, dict) or raw.get("version") != RECORD_VERSION:
            return state
        cleared = raw.get("cleared")
        if isinstance(cleared, (list, set, tuple)):
            state.cleared = {c for c in cleared if isinstance(c, str)}
        state.offloaded = _offloads(raw.get("offloaded"))
        state.summary = _summary(raw.get("summary"))
        ratio = raw.get("ratio")
        if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio == ratio:
            state.ratio = min(RATIO_MAX, max(RATIO_MIN, float(ratio)))
        if _int(raw.get("last_view_estimate")):
            state.last_view_estimate = raw["last_view_estimate"]
        if _int(raw.get("summary_failures")):
            state.summary_failures = raw["summary_failures"]
        learned = raw.get("learned_windows")
        if isinstance(learned, dict):
            state.learned_windows = {
                k: v
                for k, v in learned.items()
                if isinstance(k, str) and _int(v) and _WINDOW_MIN <= v <= _WINDOW_MAX
            }
        return state

    def save(self, scratch: dict[str, Any]) -> None:
        """Write the record into ``scratch`` as JSON-safe values."""
        s = self.summary
        scratch[SCRATCH_KEY] = {
            "version": RECORD_VERSION,
            "cleared": sorted(self.cleared),
            "offloaded": {
                k: {"preview": r.preview, "chars": r.chars, "digest": r.digest}
                for k, r in self.offloaded.items()
            },
            "summary": None
            if s is None
            else {"text": s.text, "covered": s.covered, "fingerprint": s.fingerprint},
            "ratio": self.ratio,
            "last_view_estimate": self.last_view_estimate,
            "summary_failures": self.summary_failures,
            "learned_windows": dict(self.learned_windows),
        }


def _offloads(raw: Any) -> dict[str, OffloadRecord]:
    out: dict[str, OffloadRecord] = {}
    if isinstance(raw, dict):
        for call_id, rec in raw.items():
            if not (isinstance(call_id, str) and isinstance(rec, dict)):
                continue
            preview, chars, digest = rec.get("preview"), rec.get("chars"), rec.get("digest")
            if isinstance(preview, str) and _int(chars) and isinstance(digest, str):
                out[call_id] = OffloadRecord(preview, chars, digest)
    return out


def _summary(raw: Any) -> SummaryState | None:
    if not isinstance(raw, dict):
        return None
    text, covered, fp = raw.get("text"), raw.get("covered"), raw.get("fingerprint")
    if isinstance(text, str) and _int(covered) and covered > 0 and isinstance(fp, str):
        return SummaryState(text, covered, fp)
    return None


def result_digest(output: str) -> str:
    """The digest 0.9.119 names an offloaded output by (16 hex characters)."""
    return hashlib.sha1(output.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def window_key(provider: object, model: str | None) -> str:
    """The key of a learned window: the provider's ``base_url`` and the model name."""
    return f"{getattr(provider, 'base_url', '') or ''}\x00{model or ''}"


def unique_result_ids(entries: Sequence[TranscriptEntry]) -> set[str]:
    """The ``call_id``s that exactly one tool result in ``entries`` carries."""
    counts = Counter(e.call_id for e in entries if isinstance(e, ToolResultEntry))
    return {k for k, n in counts.items() if n == 1}


def fingerprint(entries: Sequence[TranscriptEntry]) -> str:
    """0.9.119's digest of a transcript prefix: kinds, roles, ids and sizes, not the tool
    outputs' lengths (trimming an output in place is not a rewrite)."""
    h = hashlib.sha1()
    for entry in entries:
        h.update(_shape(entry).encode("utf-8", "replace") + b"\x00")
    return h.hexdigest()[:16]


def _shape(entry: TranscriptEntry) -> str:
    if isinstance(entry, InputEntry):
        content = entry.content
        if isinstance(content, str):
            size = len(content)
        else:
            size = sum(len(p.text) if isinstance(p, TextPart) else 1 for p in content)
        return f"input:{entry.role}:{size}"
    if isinstance(entry, AssistantTextEntry):
        return f"assistant:{len(entry.content)}"
    if isinstance(entry, ReasoningEntry):
        return f"reasoning:{len(entry.content)}"
    if isinstance(entry, ToolCallEntry):
        return f"call:{entry.call_id}:{len(entry.arguments)}"
    if isinstance(entry, ToolResultEntry):
        return f"result:{entry.call_id}"
    return f"unknown:{type(entry).__name__}"
