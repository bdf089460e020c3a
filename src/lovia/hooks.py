"""Hooks: handlers called for the events of a run, in order, sync or async."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from .events import RunEvent
from .run.context import RunContext

__all__ = ["AgentHooks"]

H = TypeVar("H", bound=Callable[..., Any])
E = TypeVar("E", bound=RunEvent)


class AgentHooks:
    """Register ``handler(event, ctx)`` for one event type (``on``) or every event (``on_any``).

    Handlers run inline, in registration order, before the next step of the run; an exception
    in a handler fails the run (a hook is code you own, not model output).
    """

    def __init__(self) -> None:
        self._by_type: dict[type[RunEvent], list[Callable[..., Any]]] = {}
        self._any: list[Callable[..., Any]] = []

    def on(self, event_type: type[E]) -> Callable[[H], H]:
        """Decorator: call the handler for every event of ``event_type`` (and subclasses)."""
        if not (isinstance(event_type, type) and issubclass(event_type, RunEvent)):
            from .errors import UserError

            raise UserError(
                f"hooks.on needs an event class, got {event_type!r}",
                hint="use an event from lovia.events, e.g. @hooks.on(ToolCallStarted)",
            )

        def register(handler: H) -> H:
            self._by_type.setdefault(event_type, []).append(handler)
            return handler

        return register

    def on_any(self, handler: H) -> H:
        """Decorator: call the handler for every event."""
        self._any.append(handler)
        return handler

    def handlers_for(self, event: RunEvent) -> list[Callable[..., Any]]:
        out: list[Callable[..., Any]] = []
        for cls in type(event).__mro__:
            out.extend(self._by_type.get(cls, ()))
        out.extend(self._any)
        return out

    def __bool__(self) -> bool:
        return bool(self._by_type or self._any)

    async def dispatch(self, event: RunEvent, ctx: RunContext[Any]) -> None:
        for handler in self.handlers_for(event):
            result = handler(event, ctx)
            if inspect.isawaitable(result):
                await result
