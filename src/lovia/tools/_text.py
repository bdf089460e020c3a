"""A tool result as text for the model: its JSON form, cut to a size with a notice
(``lovia.tools.base`` and ``lovia.tools`` are their public homes)."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

__all__ = ["clip_text", "result_to_text", "truncate_output", "truncate_tool_output"]


def result_to_text(value: Any) -> str:
    """The text the model sees for a tool's return value: a ``str`` as it is, anything else
    as JSON (pydantic models and dataclasses as their fields; dates, decimals, UUIDs, enums
    and bytes as JSON strings), or ``str(value)`` when it has no JSON form."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(to_jsonable_python(value), ensure_ascii=False)
    except (PydanticSerializationError, TypeError, ValueError):
        return str(value)


def truncate_tool_output(output: str, limit: int) -> str:
    """Cut ``output`` to ``limit`` characters: the first 80% and the last 20% (many tools end
    with totals or errors), with a marker between them that says how much was kept."""
    if len(output) <= limit:
        return output
    limit = max(1, limit)
    head = max(1, limit * 4 // 5)
    tail = limit - head
    marker = (
        f"\n\n[... tool output truncated: kept {head + tail:,} of {len(output):,} chars ...]\n\n"
    )
    return output[:head] + marker + (output[-tail:] if tail else "")


truncate_output = truncate_tool_output


def clip_text(
    text: str, limit: int, *, hint: str = "", keep_tail: bool = False, total: int | None = None
) -> tuple[str, bool]:
    """``(text, False)`` when ``text`` fits in ``limit`` characters; otherwise its first
    ``limit`` characters (or, with ``keep_tail``, half from each end) with a notice saying how
    much is shown and ``hint`` (what to ask for next), and ``True``. ``total`` is the size of
    the whole output when ``text`` is already a part of it (the notice names that size)."""
    if len(text) <= limit:
        return text, False
    shown = max(0, limit)
    size = max(total, len(text)) if total is not None else len(text)
    notice = f"[... truncated: showing {shown} of {size} chars.{' ' + hint if hint else ''}]"
    if shown == 0:
        return notice, True
    if keep_tail:
        head = shown // 2
        return f"{text[:head]}\n{notice}\n{text[len(text) - (shown - head) :]}", True
    return f"{text[:shown]}\n{notice}", True
