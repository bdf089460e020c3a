"""One path for every event of a run: hooks (entry agent, active agent, plugins), then the
stream consumer, with one rule for "is anyone listening?"."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._run_types import Channel
from ..events import Event, HandoffOccurred
from .narrate import LOOP_LOG, TOOL_LOG, narrate

if TYPE_CHECKING:
    from ..agent import Agent
    from ..hooks import AgentHooks
    from ..run_context import RunContext
    from .state import RunState

__all__ = ["Channel", "Emitter"]


def _no_hooks(agent: Agent) -> list[AgentHooks]:
    return []


class Emitter:
    """Delivers each event to the hooks that apply and then to the stream."""

    __slots__ = ("_ctx", "_entry_hooks", "_plugin_hooks", "_plugins", "channel", "state")

    def __init__(
        self,
        entry_hooks: AgentHooks | None,
        state: RunState,
        channel: Channel | None,
    ) -> None:
        self._entry_hooks = entry_hooks
        self.state = state
        self.channel = channel
        self._ctx: RunContext[Any] | None = None
        self._plugin_hooks: Callable[[Agent], list[AgentHooks]] = _no_hooks
        self._plugins: list[Any] = []

    def bind(
        self,
        ctx: RunContext[Any],
        plugin_hooks: Callable[[Agent], list[AgentHooks]],
        plugins: list[Any] | None = None,
    ) -> None:
        """``plugin_hooks(agent)``: the hooks of that agent's plugins in this run;
        ``plugins``: the run's plugin instances (a live list, empty in most runs)."""
        self._ctx = ctx
        self._plugin_hooks = plugin_hooks
        if plugins is not None:
            self._plugins = plugins

    def hook_sets(self, event: Event | None = None) -> list[AgentHooks]:
        """The entry agent's hooks, the acting agent's (the one whose turn it is: a handoff's
        own completion and its turn's end belong to the agent handing off) and its plugins';
        a handoff is also told to the agent receiving it."""
        out: list[AgentHooks] = []
        if self._entry_hooks:
            out.append(self._entry_hooks)
        state = self.state
        acting = (state.turn_agent or state.agent).hooks
        if acting and acting not in out:
            out.append(acting)
        if isinstance(event, HandoffOccurred):
            receiving = event.to_agent.hooks
            if receiving and receiving not in out:
                out.append(receiving)
        plugins = self._plugin_hooks(state.agent)
        if plugins:
            out.extend(h for h in plugins if h and h not in out)
        return out

    def _any_hooks(self, event: Event) -> bool:
        """Cheap first look (asked for every event): whether any hook set may apply."""
        state = self.state
        return bool(
            self._entry_hooks
            or (state.turn_agent or state.agent).hooks
            or isinstance(event, HandoffOccurred)
            or (self._plugins and self._plugin_hooks(state.agent))
        )

    def heard(self) -> bool:
        """Whether an event other than a handoff would reach anyone now: the emit sites on
        the hot path ask this first and build no event when it is ``False``."""
        if self.channel is not None or self._entry_hooks:
            return True
        state = self.state
        if (state.turn_agent or state.agent).hooks or (
            self._plugins and self._plugin_hooks(state.agent)
        ):
            return True
        # the dearest question last: narrate.narrating(), inlined (asked ten times a run)
        return LOOP_LOG.isEnabledFor(logging.DEBUG) or TOOL_LOG.isEnabledFor(logging.INFO)

    @property
    def listening(self) -> bool:
        """Whether an event would reach anyone (decided per event: the active agent and its
        plugins change on a handoff)."""
        if self.channel is not None:
            return True
        state = self.state
        if not (
            self._entry_hooks or (state.turn_agent or state.agent).hooks or self._plugins
        ):  # the common case, without building the list
            return False
        return bool(self.hook_sets())

    async def emit(self, event: Event) -> None:
        narrate(event)
        ctx = self._ctx
        if ctx is not None:
            hook_sets = self.hook_sets(event) if self._any_hooks(event) else None
            if hook_sets:  # most runs have none: no loop, no awaits
                for hooks in hook_sets:
                    await hooks.dispatch(event, ctx)
        if self.channel is not None:
            await self.channel.send(event)
