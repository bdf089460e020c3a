"""The plugin contract: ``Plugin.setup(ctx) -> PluginInstance``."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..hooks import AgentHooks
    from ..run_context import RunContext
    from ..tools import Tool

__all__ = ["Plugin", "PluginInstance", "ViewInjector"]

log = logging.getLogger("lovia.plugins")

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


def check_plugin_names(plugins: Sequence[Any], agent_name: str) -> None:
    """Refuse two plugins with one name on an agent: the name is a plugin's identity."""
    from ..errors import UserError

    seen: set[str] = set()
    for plugin in plugins:
        name = getattr(plugin, "name", None)
        if name is None:
            continue
        if name in seen:
            raise UserError(
                f"Duplicate plugin name {name!r} on agent {agent_name!r}",
                hint="a plugin's name is its identity and is set up once per run: remove "
                "the duplicate or give one of them another name",
            )
        seen.add(name)


def fail_open(injector: ViewInjector, plugin_name: str) -> ViewInjector:
    """``injector`` that adds nothing, with a warning in the log, when it raises: a broken
    reminder must not fail the run it only decorates."""
    from ..errors import RunCancelled

    async def guarded(ctx: RunContext[Any]) -> Any:
        try:
            got = injector(ctx)
            if inspect.isawaitable(got):
                got = await got
            return got
        except RunCancelled:
            raise
        except Exception:
            log.warning("view injector of plugin %r failed; skipped", plugin_name, exc_info=True)
            return None

    return guarded
