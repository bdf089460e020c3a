"""What a run resolves per agent, once: its provider, its tools (own, plugins', context
policy's, handoffs'), and its plugins' instances (set up when the agent first acts in the run,
closed when the run ends, as are the providers the run built from model strings)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ..agent import Agent
from ..context.policy import ContextPolicy, policy_tools
from ..errors import UserError
from ..hooks import AgentHooks
from ..plugins.base import PluginInstance, check_plugin_names, fail_open
from ..providers.base import Provider, supports_vision
from ..providers.registry import resolve_model
from ..run_context import RunContext
from ..tools import Tool
from ..workspace._activation import open_for_run
from .options import RunOptions
from .resume import reachable_agents

__all__ = ["AgentKit"]

log = logging.getLogger("lovia.run")
_NOT_OFFERED: set[tuple[str, Any]] = set()  # (tool, model) pairs already logged


class _Tooling:
    """An agent's tools (own, plugins', context policy's, handoffs') resolved once per run."""

    __slots__ = ("by_name", "specs")

    def __init__(self, tools: list[Tool]) -> None:
        self.by_name = {t.name: t for t in tools}
        self.specs = [t.openai_schema() for t in tools]


class AgentKit:
    """The per-agent resolutions of one run (cached for the run)."""

    def __init__(self, entry_agent: Agent, options: RunOptions, ctx: RunContext[Any]) -> None:
        self.entry_agent = entry_agent
        self.o = options
        self.ctx = ctx
        self._providers: dict[int, Provider] = {}
        self._tooling: dict[int, _Tooling] = {}
        self._plugins: dict[int, list[PluginInstance]] = {}
        self._workspaces: dict[int, Any] = {}  # each agent's live workspace session
        self._plugin_order: list[PluginInstance] = []
        self.plugin_order = self._plugin_order  # read-only view: set up, not yet closed
        self._owned: list[Provider] = []

    async def activate_plugins(self, agent: Agent) -> None:
        """Set up ``agent``'s workspace and plugins once per run; ``ctx.workspace`` becomes
        its workspace session (also when it acts again after a handoff)."""
        if id(agent) in self._plugins or not (agent.plugins or agent.workspace is not None):
            self._plugins.setdefault(id(agent), [])
            self.ctx.workspace = self._workspaces.get(id(agent))
            return
        check_plugin_names(agent.plugins, agent.name)
        instances: list[PluginInstance] = []
        self._plugins[id(agent)] = instances
        self.ctx.workspace = None
        if agent.workspace is not None:  # first, so plugins set up after it can use it
            session, contributed = await open_for_run(agent.workspace)
            self._workspaces[id(agent)] = self.ctx.workspace = session
            instances.append(contributed)
            self._plugin_order.append(contributed)
        for plugin in agent.plugins:
            name = getattr(plugin, "name", plugin)
            inst = await plugin.setup(self.ctx)
            if not isinstance(inst, PluginInstance):
                raise UserError(
                    f"plugin {name!r}.setup() returned {type(inst).__name__}, not PluginInstance"
                )
            if inst.view_injectors:
                guarded = [fail_open(i, str(name)) for i in inst.view_injectors]
                inst = dataclasses.replace(inst, view_injectors=guarded)
            instances.append(inst)
            self._plugin_order.append(inst)
        self._tooling.pop(id(agent), None)

    def plugin_hooks(self, agent: Agent) -> list[AgentHooks]:
        instances = self._plugins.get(id(agent))
        if not instances:  # asked for every event: most agents have no plugins
            return []
        return [i.hooks for i in instances if i.hooks]

    def plugin_instances(self, agent: Agent) -> list[PluginInstance]:
        return self._plugins.get(id(agent), [])

    def plugin_guards(self, agent: Agent, kind: str) -> list[Any]:
        out: list[Any] = []
        for inst in self._plugins.get(id(agent), ()):
            out.extend(inst.input_guardrails if kind == "input" else inst.output_guardrails)
        return out

    async def close_plugins(self) -> None:
        while self._plugin_order:
            inst = self._plugin_order.pop()
            try:
                await inst.aclose()
            except Exception as exc:
                log.warning("a plugin failed to close: %r", exc)

    def provider(self, agent: Agent) -> Provider:
        key = id(agent)
        found = self._providers.get(key)
        if found is None:
            found = self._providers[key] = resolve_model(agent.model, agent.name)
            if found is not agent.model:  # built here from a model string: the run owns it
                self._owned.append(found)
        return found

    @property
    def owns_providers(self) -> bool:
        """Whether this run built a provider from a model string (closed when it ends)."""
        return bool(self._owned)

    async def close(self) -> None:
        """At the run's end: its plugins closed, then the providers it built."""
        await self.close_plugins()
        await self.close_providers()

    async def close_providers(self) -> None:
        """Close the providers this run built from model strings (never a caller's own)."""
        while self._owned:
            aclose = getattr(self._owned.pop(), "aclose", None)
            if aclose is None:
                continue
            try:
                await aclose()
            except Exception as exc:
                log.warning("a provider failed to close: %r", exc)

    def policy(self, agent: Agent) -> ContextPolicy:
        """The run's context policy: the run's own, else the entry agent's for the whole run,
        after handoffs too (posture lives on the agent the run started with, as in 0.9.119)."""
        del agent  # the active agent does not change it
        return self.o.context_policy or self.entry_agent.context_policy

    def output_type(self, agent: Agent) -> Any:
        return self.o.output_type if self.o.output_type is not None else agent.output_type

    def all_tools(self, agent: Agent) -> list[Tool]:
        """The tools offered, in 0.9.119's order: the agent's own, its plugins' (in the order
        of ``plugins``), its workspace's, its handoffs', then the context policy's."""
        tools = agent.all_tools(self.policy(agent))
        instances = self._plugins.get(id(agent), ())
        plugin_tools = [t for i in instances for t in i.tools]
        if any(t.returns_images for t in plugin_tools):
            plugin_tools = self._seeable(agent, plugin_tools)
        if plugin_tools:
            names = {t.name for t in tools}
            for t in plugin_tools:
                if t.name in names:
                    raise UserError(
                        f"Tool name conflict for {t.name!r} from a plugin: agent "
                        f"{agent.name!r} has two tools with that name",
                        hint="rename one of them",
                    )
                names.add(t.name)
            # the workspace's instance is set up first, but its tools come after the plugins'
            if agent.workspace is not None and instances:
                workspace = {id(t) for t in instances[0].tools}
                plugin_tools = [
                    *(t for t in plugin_tools if id(t) not in workspace),
                    *(t for t in plugin_tools if id(t) in workspace),
                ]
            own = [t for t in tools if any(t is o for o in agent.tools)]
            moves = [t for t in tools if t.handoff is not None or t.handoff_target is not None]
            placed = [*own, *moves]
            policy = [t for t in tools if not any(t is p for p in placed)]
            # An agent whose tools all come from plugins (a workspace, MCP, the toolkit) has
            # outputs a marker may stand for: it gets the policy's tools as well, last.
            extra = [t for t in policy_tools(self.policy(agent)) if t.name not in names]
            tools = [*own, *plugin_tools, *moves, *policy, *extra]
        return tools

    def _seeable(self, agent: Agent, tools: list[Tool]) -> list[Tool]:
        """A plugin's or workspace's tools without those returning images, when the model
        cannot see images (an agent's own tools are its owner's choice and stay)."""
        provider = self.provider(agent)
        if supports_vision(provider):
            return tools
        left = [t for t in tools if not t.returns_images]
        for t in tools:
            key = (t.name, getattr(provider, "model", None))
            if t.returns_images and key not in _NOT_OFFERED:
                _NOT_OFFERED.add(key)
                log.info("tool %r returns images the model cannot see; not offering it", t.name)
        return left

    def tooling(self, agent: Agent) -> _Tooling:
        key = id(agent)
        found = self._tooling.get(key)
        if found is None:
            found = self._tooling[key] = _Tooling(self.all_tools(agent))
        return found

    def known_agents(self) -> dict[str, Agent]:
        return reachable_agents(self.entry_agent)
