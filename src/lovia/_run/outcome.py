"""The plain values of the tool phase: a call's ``Outcome``, a call ready to run, and how a
turn's calls are grouped (parallel runs together; a sequential tool or a handoff alone)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ..messages import ToolCall
from ..parts import coerce_parts, project_parts
from ..tools import Tool, result_to_text, truncate_output
from ..transcript import ToolCallEntry

__all__ = [
    "Outcome",
    "Ready",
    "as_call",
    "batches",
    "failed",
    "json_safe",
    "load_arguments",
    "outcome",
    "rendered",
    "storable",
    "stored_raw",
]

_KEEP_RAW_MAX_CHARS = 20_000

log = logging.getLogger("lovia.run")


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
    mark: bool = True
    """Recorded as started before it runs (``RunHead.started_calls``); False only for a call
    a resume would run again in any case: no approval, and its tool's ``on_resume`` is
    ``"rerun"``."""


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


_SCAN: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # its own scanner


def load_arguments(text: str) -> Any:
    """``json.loads(text)``: the common call's arguments (a JSON document with no whitespace
    around it) are scanned at once; anything else, errors included, goes to ``json.loads``."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return value


def json_safe(value: Any) -> bool:
    """Whether ``raw`` can be stored as it is (JSON, UTF-8); else only ``output`` is kept."""
    if value is None or isinstance(value, (int, float, bool)):
        return True
    if type(value) is str:  # any text is JSON; only a lone surrogate fails UTF-8
        if value.isascii():
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, (str, list, dict)):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError):
            return False
        return True
    return False


def stored_raw(value: Any) -> Any:
    """``raw`` as a result entry keeps it: JSON as it is; a pydantic model, a dataclass, a
    tuple or a list of them as its JSON form (fields, list), as 0.9.119 keeps them; anything
    else ``None``."""
    if json_safe(value):
        return value
    if isinstance(value, BaseModel | tuple | list) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        try:
            converted = to_jsonable_python(value)
        except (PydanticSerializationError, TypeError, ValueError):
            return None
        return converted if json_safe(converted) else None
    return None


def storable(text: str) -> str:
    """Escape lone surrogates (text decoded with ``surrogateescape``, odd file names): UTF-8
    JSON cannot hold them, so the next save would fail, and fail again on every resume."""
    if text.isascii():  # most tool output: no copy to find out
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def failed(tool_name: str, exc: Exception, span: Any = None) -> Outcome:
    """The error result of a call whose tool raised ``exc`` (logged, and on its span)."""
    log.warning("tool %s failed: %r", tool_name, exc)
    if span is not None:
        span.record_exception(exc)
    text = f"Tool error: {str(exc) or type(exc).__name__}"
    return Outcome(text, True, raw=text, error=exc)


def outcome(output: str, is_error: bool = False) -> Outcome:
    """An ``on_resume`` callable may return this to record a result without running the tool."""
    return Outcome(output, is_error, raw=output)


async def rendered(tool: Tool, agent: Any, value: Any, ctx: Any) -> Outcome:
    """The ``Outcome`` of a call that returned ``value``: parts projected, or the renderer's
    text (the tool's, else the agent's), cut to the output limit."""
    renderer: Any = tool.result_renderer or agent.tool_result_renderer
    parts = coerce_parts(value) if not isinstance(value, str) else None
    if parts is not None:
        text, raw = project_parts(parts), None
    elif renderer is None and type(value) is str:  # the common result: its text as it is
        text = raw = value
    else:
        try:
            text = renderer(value, ctx) if renderer is not None else result_to_text(value)
            if type(text) is not str and inspect.isawaitable(text):
                text = await text
            if not isinstance(text, str):
                text = str(text)
        except Exception as exc:
            text = f"Tool error: result rendering failed: {exc}"
            return Outcome(text, True, raw=text, error=exc)
        raw = value
    limit = tool.max_output_chars or agent.max_tool_output_chars
    if limit and len(text) > limit:
        text, raw, parts = truncate_output(text, limit), None, None
    elif len(text) > _KEEP_RAW_MAX_CHARS:
        raw = None
    return Outcome(storable(text), False, raw=raw, parts=parts)
