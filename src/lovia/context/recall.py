"""The ``recall_tool_result`` tool: give the model back an output the view left out.

It never runs the original tool again. It looks in the result store first (the archive
holds the output exactly as the tool returned it), then in the live transcript.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..run_context import RunContext
from ..stores.maintenance import is_trimmed as trimmed
from ..stores.maintenance import marker_ref
from ..tools import Tool, tool
from ..transcript import ToolResultEntry, TranscriptEntry
from ._render import RECALL_TOOL_NAME
from .results import ResultStore, content_digest, get_result, stored_digests
from .state import result_digest

__all__ = ["RECALL_TOOL_NAME", "is_trimmed", "make_recall_tool", "recall"]

log = logging.getLogger("lovia.context")

_DIGEST = re.compile(r"^[0-9a-f]{24}\Z")
_OLD_DIGEST = re.compile(r"^[0-9a-f]{16}\Z")  # lovia 0.9.119's


def is_trimmed(output: str) -> bool:
    """True when ``output`` was cut by ``trim_tool_results`` (ours or 0.9.119's); a trimmed
    text is never archived as if it were the original, and a recall of one says what was
    lost."""
    return trimmed(output)


def make_recall_tool(store: ResultStore | None) -> Tool:
    """Build the recall tool over ``store`` (``None``: the transcript only)."""

    @tool(name=RECALL_TOOL_NAME, parallel=True)
    async def recall_tool_result(ref: str, ctx: RunContext[Any]) -> str:
        """Return the full output of an earlier tool call that the context shortened.

        Args:
            ref: the call id, or the reference shown in the shortened result's marker.
        """
        return await recall(ref, ctx.entries, store)

    return recall_tool_result


async def recall(ref: str, entries: Sequence[TranscriptEntry], store: ResultStore | None) -> str:
    """The full output for ``ref`` (a digest or call id), or a plain "not found" text."""
    ref = ref.strip().strip("\"'")
    if store is not None and ref and not ref.startswith("call-"):
        # a digest (what every marker names), or a key a 0.9.119 store holds
        archived = await _read(get_result(store, ref))
        if archived is not None:
            return archived
    marked = _marked_result(entries, ref)  # a trimmed output whose marker names ref
    latest = _latest_result(entries, ref)
    if store is not None:
        archived = await _read(_archived_for_call(store, ref, marked or latest))
        if archived is not None:
            return archived
    found = _result_by_digest(entries, ref) or marked or latest
    if found is None:
        return (
            f'No tool result found for "{ref}": not found in the result store or the transcript.'
            " Use a call id or the reference in a marker."
        )
    if is_trimmed(found.output):
        return (
            found.output + "\n[The rest of this output was trimmed from the session and no "
            "archive holds it; run the tool again if you need it.]"
        )
    return found.output


async def _read(lookup: Awaitable[str | None]) -> str | None:
    """A store lookup that fails is a miss: the transcript is the fallback, not an error."""
    try:
        return await lookup
    except Exception as exc:
        log.warning("the result store could not be read (%s); using the transcript", exc)
        return None


def _latest_result(entries: Sequence[TranscriptEntry], call_id: str) -> ToolResultEntry | None:
    for e in reversed(entries):
        if isinstance(e, ToolResultEntry) and e.call_id == call_id:
            return e
    return None


def _marked_result(entries: Sequence[TranscriptEntry], ref: str) -> ToolResultEntry | None:
    """The latest trimmed result whose trim marker names ``ref``: the one a model asking
    for ``ref`` was shown (a marker of an older version names a call id that may recur)."""
    for e in reversed(entries):
        if isinstance(e, ToolResultEntry) and marker_ref(e.output) == ref:
            return e
    return None


def _result_by_digest(entries: Sequence[TranscriptEntry], ref: str) -> ToolResultEntry | None:
    """The result whose digest is ``ref`` (this project's, or the one 0.9.119's markers and
    summaries name)."""
    digest: Callable[[str], str]
    if _DIGEST.match(ref):
        digest = content_digest
    elif _OLD_DIGEST.match(ref):
        digest = result_digest
    else:
        return None
    for e in reversed(entries):
        if isinstance(e, ToolResultEntry) and digest(e.output) == ref:
            return e
    return None


async def _archived_for_call(
    store: ResultStore, call_id: str, seen: ToolResultEntry | None
) -> str | None:
    """The archived output of ``call_id`` that best matches what the transcript still shows.

    Call ids may repeat across turns, so several outputs can be listed for one id; the one
    sharing the longest beginning with the (possibly trimmed) transcript output wins, the
    latest on a tie.
    """
    best: str | None = None
    best_score = -1
    for digest in await stored_digests(store, call_id):
        content = await get_result(store, digest)
        if content is None:
            continue
        score = _common_prefix(content, seen.output) if seen is not None else 0
        if score >= best_score:
            best, best_score = content, score
    return best


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    step = 256
    while i < n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)
