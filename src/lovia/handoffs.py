"""Handoffs: a tool ``transfer_to_<name>`` that makes another agent the active one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import UserError
from .tools import Tool

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["Handoff", "handoff_tool"]


@dataclass(frozen=True)
class Handoff:
    """Hand the conversation to ``target``. The body carries over; the system prompt changes."""

    target: Agent
    name: str | None = None
    description: str | None = None

    @property
    def tool_name(self) -> str:
        raw = self.name or self.target.name
        return "transfer_to_" + re.sub(r"[^A-Za-z0-9_-]", "_", raw).lower()[:50]


async def _never_called(args: dict[str, Any], ctx: Any) -> str:  # the loop applies handoffs
    return ""


def as_handoff(item: Any) -> Handoff:
    from .agent import Agent

    if isinstance(item, Handoff):
        return item
    if isinstance(item, Agent):
        return Handoff(item)
    raise UserError(
        f"cannot use {type(item).__name__} as a handoff",
        hint="list agents or Handoff(agent, ...) in Agent(handoffs=[...])",
    )


def handoff_tool(handoff: Handoff) -> Tool:
    """The tool the model calls to hand off; the loop treats it as a barrier."""
    target = handoff.target
    description = handoff.description or (
        f"Hand the conversation to the agent {target.name!r}."
        + (f" {target.handoff_description}" if target.handoff_description else "")
    )
    return Tool(
        name=handoff.tool_name,
        description=description,
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        invoke=_never_called,
        parallel=False,
        handoff_target=target,
    )
