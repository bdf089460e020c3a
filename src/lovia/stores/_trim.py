"""The marker that ends a trimmed tool output, and the reference it names.

A trimmed output ends with ``[lovia: trimmed N of M characters; recall_tool_result("<ref>")
...]``. ``<ref>`` is the content digest of the whole output as it was (``output_digest``),
the key under which a context policy with a result store archived it. A call id is not
enough: providers that number calls per turn (``call_0``) reuse ids across runs, and one
result store serves many sessions, so only the content names one output. The digest is a
pure function of the output, so trimming needs no archive at hand and stays idempotent.

Markers written before (ours naming the call id, lovia 0.9.119's ``[... N chars trimmed from
stored history; ...]``) are recognised: a trimmed output is never trimmed twice, and
``marker_ref`` reads the reference any of them names.
"""

from __future__ import annotations

import hashlib
import json
import re

__all__ = ["is_trimmed", "marker_ref", "output_digest", "trim_marker", "trimmed_text"]

_DIGEST_CHARS = 24  # 96 bits of sha256: collisions are not a practical concern

# a trim's marker (ours, with or without the recall part, or 0.9.119's): trimmed once only
_MARKER = re.compile(
    r"\n\[lovia: trimmed \d+ of \d+ characters(?:; recall_tool_result\((?P<ours>.*)\)[^\n]*)?\]\Z"
    r"|\n\[\.\.\. [\d,]+ chars trimmed from stored history; "
    r"recall_tool_result\((?P<old>.*)\)[^\n]*\]\Z"
)


def output_digest(output: str) -> str:
    """The content digest a tool output is archived under (24 hex characters of sha256)."""
    return hashlib.sha256(output.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]


def trim_marker(cut: int, total: int, ref: str) -> str:
    """The text that ends a trimmed output: how many of how many characters were cut, and
    the ``recall_tool_result`` call (by ``ref``) that brings the whole output back from an
    archive."""
    quoted = json.dumps(ref, ensure_ascii=False)
    return (
        f"\n[lovia: trimmed {cut} of {total} characters; recall_tool_result({quoted}) returns "
        "the whole output if a result store archived it]"
    )


def trimmed_text(output: str, keep_chars: int) -> str | None:
    """``output`` cut to ``keep_chars`` and its marker (naming the output's digest), or
    ``None`` when it is short enough, already trimmed, or the marker would not shorten it."""
    total = len(output)
    if total <= keep_chars or is_trimmed(output):
        return None
    cut = output[:keep_chars] + trim_marker(total - keep_chars, total, output_digest(output))
    return cut if len(cut) < total else None


def is_trimmed(output: str) -> bool:
    """True when ``output`` already ends with a trim marker (so trimming it again is a no-op)."""
    return _MARKER.search(output) is not None


def marker_ref(output: str) -> str | None:
    """The reference the trim marker ending ``output`` names (a digest, or the call id older
    markers name), or ``None`` when ``output`` is not trimmed or its marker names none."""
    found = _MARKER.search(output)
    if found is None:
        return None
    quoted = found.group("ours") or found.group("old")
    if quoted is None:
        return None
    try:
        ref = json.loads(quoted)
    except ValueError:
        ref = quoted.strip('"')  # 0.9.119 wrote the id between quotes without escaping it
    return ref if isinstance(ref, str) else None
