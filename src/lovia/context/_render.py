"""Per-entry facts the compaction policy caches, and the markers it renders.

Everything here is a pure function of an entry's content, so a marker renders to the
same bytes on every call and in every process.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..transcript import InputEntry, ToolResultEntry, TranscriptEntry
from .prompts import SUMMARY_WRAPPER
from .results import content_digest
from .state import OffloadRecord
from .tokens import IMAGE_TOKENS, entry_tokens

__all__ = [
    "HUGE_RESULT_CHARS",
    "PREVIEW_CHARS",
    "RECALL_TOOL_NAME",
    "Info",
    "clear_marker",
    "info_for",
    "leading_system",
    "offload_marker",
    "protected_start",
    "starts_block",
    "summary_entry",
]

HUGE_RESULT_CHARS = 4_000
"""Tool outputs this long are offloaded to a preview marker first."""
PREVIEW_CHARS = 300
"""How much of an offloaded output the preview marker keeps."""
RECALL_TOOL_NAME = "recall_tool_result"
"""The tool every marker points the model to (``recall`` makes it)."""


class Info:
    """One entry with its token estimate; for tool results, its digest and markers."""

    __slots__ = ("_cleared", "_digest", "_preview", "entry", "is_result", "tokens")

    def __init__(self, entry: TranscriptEntry, image_tokens: int = IMAGE_TOKENS) -> None:
        self.entry = entry
        self.tokens = entry_tokens(entry, image_tokens=image_tokens)
        self.is_result = isinstance(entry, ToolResultEntry)
        self._digest: str | None = None
        self._cleared: Info | None = None
        self._preview: Info | None = None

    def digest(self) -> str:
        """The content digest of a tool result's output (computed once)."""
        if self._digest is None:
            assert isinstance(self.entry, ToolResultEntry)
            self._digest = content_digest(self.entry.output)
        return self._digest

    def digest_if_huge(self) -> str | None:
        """The digest when this is a result big enough to offload, else ``None``."""
        entry = self.entry
        if isinstance(entry, ToolResultEntry) and len(entry.output) >= HUGE_RESULT_CHARS:
            return self.digest()
        return None

    def cleared(self, recall: bool = True) -> Info:
        """This result as a one-line marker (naming the recall call when there is one)."""
        if self._cleared is None:
            entry = self.entry
            assert isinstance(entry, ToolResultEntry)
            chars = len(entry.output)
            text = (
                clear_marker(self.digest(), chars)
                if recall
                else f"[tool result cleared to save context: {chars} chars]"
            )
            # An output shorter than its marker stays as it is: clearing it would cost more.
            shorter = len(entry.output) <= len(text) and not entry.parts
            self._cleared = self if shorter else Info(_replaced(entry, text))
        return self._cleared

    def preview(self, recall: bool = True) -> Info:
        """This result as its beginning plus a marker (naming the recall call when there is one)."""
        if self._preview is None:
            entry = self.entry
            assert isinstance(entry, ToolResultEntry)
            record = OffloadRecord(entry.output[:PREVIEW_CHARS], len(entry.output), self.digest())
            text = offload_marker(record, recall)
            self._preview = Info(_replaced(entry, text))
        return self._preview


def clear_marker(ref: str, chars: int | None = None) -> str:
    """The one-line text a cleared tool result shows: its size (when given) and the
    ``recall_tool_result`` call that gives it back (``ref``: a digest or a call id)."""
    size = f": {chars} chars" if chars is not None else ""
    return f'[tool result cleared to save context{size}; {RECALL_TOOL_NAME}("{ref}") shows it]'


def offload_marker(record: OffloadRecord, recall: bool = True) -> str:
    """The text an offloaded tool result shows: its preview, how much is left out, and the
    ``recall_tool_result`` call (by ``record.digest``) that gives the whole output back."""
    rest = record.chars - len(record.preview)
    text = f"{record.preview}\n[... {rest} more characters not shown to save context."
    if recall:
        text += f' Call {RECALL_TOOL_NAME}("{record.digest}") for the full output.'
    return text + "]"


def summary_entry(text: str) -> InputEntry:
    """The user-role entry that shows the summary ``text`` in a view."""
    return InputEntry(role="user", content=SUMMARY_WRAPPER.format(summary=text))


def info_for(entry: TranscriptEntry, image_tokens: int = IMAGE_TOKENS) -> Info:
    return Info(entry, image_tokens)


def _replaced(entry: ToolResultEntry, text: str) -> ToolResultEntry:
    """``entry`` showing ``text`` instead of its output (and without its images or files)."""
    return entry.model_copy(update={"output": text, "parts": None})


def leading_system(entries: Sequence[TranscriptEntry]) -> int:
    """How many system entries open the transcript (the rendered instructions)."""
    n = 0
    for e in entries:
        if not (isinstance(e, InputEntry) and e.role == "system"):
            break
        n += 1
    return n


def starts_block(infos: Sequence[Info], i: int) -> bool:
    """True when position ``i`` begins a user message or a model turn.

    Cutting only here keeps every tool call together with its results.
    """
    entry = infos[i].entry
    if isinstance(entry, ToolResultEntry):
        return False
    if isinstance(entry, InputEntry) or i == 0:
        return True
    return isinstance(infos[i - 1].entry, (ToolResultEntry, InputEntry))


def protected_start(infos: Sequence[Info], keep_recent: float) -> int:
    """Where the protected tail begins: the latest model turn (or user message) and the
    turns before it that fit in ``keep_recent`` tokens."""
    acc = 0
    start = len(infos)
    found = False
    for i in range(len(infos) - 1, -1, -1):
        acc += infos[i].tokens
        if starts_block(infos, i):
            if not found or acc <= keep_recent:
                start, found = i, True
            else:
                break
    return start
