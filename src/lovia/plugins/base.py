"""The plugin contract: ``Plugin.setup(ctx) -> PluginInstance``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..hooks import AgentHooks
    from ..run_context import RunContext
    from ..tools import Tool

__all__ = ["Plugin", "PluginInstance", "ViewInjector"]

ViewInjector = Callable[["RunContext[Any]"], Any]
"""``injector(ctx) -> list[TranscriptEntry] | None`` (sync or async), called before every model
call: the entries it returns are added to the end of that call's view only, never stored."""


async def _nothing_to_close() -> None:
    return None


@dataclass
class PluginInstance:
    """What one plugin contributes to one run. Every field is optional.

    Build run-scoped state inside ``setup`` and close the tools over it, so two runs of one
    agent never share it. ``aclose`` is awaited when the run ends (last activated first),
    whatever the outcome; release connections and processes there.
    """

    tools: list[Tool] = field(default_factory=list)
    view_injectors: list[ViewInjector] = field(default_factory=list)
    instructions: str | None = None
    hooks: AgentHooks | None = None
    input_guardrails: list[Callable[..., Any]] = field(default_factory=list)
    output_guardrails: list[Callable[..., Any]] = field(default_factory=list)
    aclose: Callable[[], Awaitable[None]] = _nothing_to_close


@runtime_checkable
class Plugin(Protocol):
    """A capability bundle. ``name`` is unique among an agent's plugins and never changes;
    ``setup(ctx)`` is awaited once per run (and per agent on a handoff) and returns a fresh
    ``PluginInstance``."""

    name: str

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance: ...
