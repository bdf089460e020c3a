"""Hooks: handlers called for the events of a run, in order, sync or async."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .events import Event

if TYPE_CHECKING:
    from .run_context import RunContext

__all__ = ["AgentHooks", "dispatch"]

log = logging.getLogger("lovia.hooks")

H = TypeVar("H", bound=Callable[..., Any])


class AgentHooks:
    """Register ``handler(event, ctx)`` for event types (``on``) or every event (``on_any``).

    ``on`` takes an event class or a tuple of them; a base class such as ``ToolEvent`` or
    ``Event`` matches all its subclasses. For each event, catch-all handlers run first, then
    the typed ones, each in registration order. Handlers may be sync or async. Hooks observe:
    a handler that raises is logged (logger ``lovia.hooks``) and the run goes on.
    """

    def __init__(self) -> None:
        self._by_type: dict[type[Event], list[Callable[..., Any]]] = {}
        self._any: list[Callable[..., Any]] = []

    def on(self, event_type: type[Any] | tuple[type[Any], ...]) -> Callable[[H], H]:
        """Decorator: call the handler for every event of ``event_type`` (and subclasses)."""
        types = event_type if isinstance(event_type, tuple) else (event_type,)
        for t in types:
            if not (isinstance(t, type) and issubclass(t, Event)):
                from .errors import UserError

                raise UserError(
                    f"hooks.on needs an event class, got {t!r}",
                    hint="use an event from lovia.events, e.g. @hooks.on(events.ToolCallStarted)",
                )

        def register(handler: H) -> H:
            for t in types:
                self._by_type.setdefault(t, []).append(handler)
            return handler

        return register

    def on_any(self, handler: H) -> H:
        """Decorator: call the handler for every event."""
        self._any.append(handler)
        return handler

    def handlers_for(self, event: Event) -> list[Callable[..., Any]]:
        out = list(self._any)
        for event_type, handlers in self._by_type.items():
            if isinstance(event, event_type):
                out.extend(handlers)
        return out

    def __bool__(self) -> bool:
        return bool(self._by_type or self._any)

    async def dispatch(self, event: Event, ctx: RunContext[Any]) -> None:
        """Call every matching handler; a handler that raises is logged, not propagated."""
        for handler in self.handlers_for(event):
            try:
                result = handler(event, ctx)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.warning(
                    "hook.error: handler %r failed for %s; continuing",  # 0.9.119's words
                    getattr(handler, "__qualname__", handler),
                    type(event).__name__,
                    exc_info=True,
                )


async def dispatch(hooks: AgentHooks | None, event: Event, ctx: RunContext[Any]) -> None:
    """``hooks.dispatch(event, ctx)`` when there are hooks."""
    if hooks is not None:
        await hooks.dispatch(event, ctx)
