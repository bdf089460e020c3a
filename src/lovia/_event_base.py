"""The base of every stream event, its groups, and the JSON form of an event's fields
(``lovia.events`` is their public home)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar

from .messages import ToolCall
from .transcript import entry_to_dict, to_json_safe

__all__ = [
    "ContextEvent",
    "DeltaEvent",
    "ErrorEvent",
    "Event",
    "MessageEvent",
    "RunEvent",
    "ToolEvent",
    "TransitionEvent",
    "TurnEvent",
]


class Event:
    """Base of every stream event."""

    __slots__ = ()
    type: ClassVar[str] = "event"
    terminal: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):  # type: ignore[arg-type]
            if f.name.startswith("_"):
                continue
            out[f.name] = _jsonable(getattr(self, f.name))
        return out


class RunEvent(Event):
    """The start and the end of a run."""

    __slots__ = ()


class TurnEvent(Event):
    """The start and the end of a turn."""

    __slots__ = ()


class DeltaEvent(Event):
    """Streamed pieces of a model answer (provisional until ``MessageCompleted``)."""

    __slots__ = ()


class MessageEvent(Event):
    """Whole messages: a model turn completed, a message injected."""

    __slots__ = ()


class ToolEvent(Event):
    """A tool call's life: approval, start, completion."""

    __slots__ = ()


class TransitionEvent(Event):
    """Control moved from one agent to another."""

    __slots__ = ()


class ErrorEvent(Event):
    """A non-terminal error: a failed tool call, a model call retried."""

    __slots__ = ()


class ContextEvent(Event):
    """The model's view of the conversation changed."""

    __slots__ = ()


def _name(agent: Any) -> Any:
    return getattr(agent, "name", agent)


def _call_dict(call: Any) -> Any:
    if isinstance(call, ToolCall):
        return {
            "id": call.id,
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }
    return _jsonable(call)


def _error_dict(err: BaseException) -> dict[str, Any]:
    to_dict = getattr(err, "to_dict", None)
    if callable(to_dict):
        out = to_dict()
        if isinstance(out, dict):
            return out
    return {"type": type(err).__name__, "message": str(err)}


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return entry_to_dict(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, ToolCall):
        return _call_dict(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, BaseException):
        return _error_dict(value)
    return to_json_safe(value)
