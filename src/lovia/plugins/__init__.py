"""Plugins: bundles of tools, instructions, hooks and guardrails an agent takes into each run.

``Agent(plugins=[...])`` activates every plugin once per run (and once per agent reached by a
handoff): ``await plugin.setup(ctx)`` returns a fresh ``PluginInstance`` whose contributions
join the agent's own, and whose ``aclose()`` runs when the run ends.
"""

from __future__ import annotations

from .base import Plugin, PluginInstance, ViewInjector

__all__ = ["Plugin", "PluginInstance", "ViewInjector"]
