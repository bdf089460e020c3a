"""The plain values of the tool phase: a call's ``Outcome``, a call ready to run, and how a
turn's calls are grouped (parallel runs together; a sequential tool or a handoff alone)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..messages import ToolCall
from ..tools import Tool
from ..transcript import ToolCallEntry

__all__ = ["Outcome", "Ready", "as_call", "batches", "json_safe", "outcome", "storable"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one call produced: the text the model sees and what the tool returned."""

    output: str
    is_error: bool = False
    raw: Any = None
    parts: list[Any] | None = None
    error: BaseException | None = None


@dataclass(slots=True)
class Ready:
    call: ToolCallEntry
    tool: Tool
    args: dict[str, Any]


def as_call(entry: ToolCallEntry) -> ToolCall:
    return ToolCall(id=entry.call_id, name=entry.name, arguments=entry.arguments)


def batches(calls: Sequence[ToolCallEntry], tools: dict[str, Tool]) -> list[list[ToolCallEntry]]:
    """Group calls: runs of parallel tools together; a sequential tool or handoff alone."""
    groups: list[list[ToolCallEntry]] = []
    current: list[ToolCallEntry] = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is not None and (not tool.parallel or tool.handoff_target is not None):
            if current:
                groups.append(current)
                current = []
            groups.append([call])
        else:
            current.append(call)
    if current:
        groups.append(current)
    return groups


def json_safe(value: Any) -> bool:
    """Whether ``raw`` can be stored as it is (JSON, UTF-8); else only ``output`` is kept."""
    if value is None or isinstance(value, (int, float, bool)):
        return True
    if isinstance(value, (str, list, dict)):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError):
            return False
        return True
    return False


def storable(text: str) -> str:
    """Escape lone surrogates (text decoded with ``surrogateescape``, odd file names): UTF-8
    JSON cannot hold them, so the next save would fail, and fail again on every resume."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def outcome(output: str, is_error: bool = False) -> Outcome:
    """An ``on_resume`` callable may return this to record a result without running the tool."""
    return Outcome(output, is_error, raw=output)
