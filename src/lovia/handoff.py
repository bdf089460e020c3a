"""``lovia.handoff``: ``Handoff`` (an agent reachable as a ``transfer_to_<name>`` tool) and the
builders of the multi-agent tools, under the names lovia 0.9.119 gives them."""

from __future__ import annotations

from .handoffs import Handoff, HandoffCallback, agent_tool, handoff_tool

HANDOFF_TOOL_PREFIX = "transfer_to_"
build_handoff_tool = handoff_tool
agent_as_tool = agent_tool

__all__ = [
    "HANDOFF_TOOL_PREFIX",
    "Handoff",
    "HandoffCallback",
    "agent_as_tool",
    "build_handoff_tool",
    "handoff_tool",
]
