"""Which served agent answers: by the name a request asks for, or the one whose handoff
graph holds a parked run's active agent. ``agents`` maps the names agents are served
under (which may differ from ``Agent.name``) to the agents."""

from __future__ import annotations

from collections.abc import Mapping

from .._run.resume import reachable_agents
from ..agent import Agent
from ..errors import UserError

__all__ = ["NO_MODEL_HINT", "entry_agent", "pick_agent", "served_name"]

NO_MODEL_HINT = (
    "set LOVIA_MODEL (e.g. 'openai:gpt-4.1' with OPENAI_API_KEY, or "
    "'anthropic:claude-sonnet-4-5' with ANTHROPIC_API_KEY), or start 'lovia web --demo'"
)


def pick_agent(agents: Mapping[str, Agent], name: str | None) -> Agent:
    """The agent served as ``name`` (the first one for ``None``); ``UserError`` when there
    is none."""
    if not agents:
        raise UserError("no agent is configured", hint=NO_MODEL_HINT)
    if name is None:
        return next(iter(agents.values()))
    found = agents.get(name)
    if found is None:
        raise UserError(f"unknown agent {name!r}", hint=f"use one of: {', '.join(agents)}")
    return found


def served_name(agents: Mapping[str, Agent], agent: Agent) -> str | None:
    """The name ``agent`` is served under, or ``None`` when it is not served itself."""
    return next((k for k, a in agents.items() if a is agent), None)


def entry_agent(agents: Mapping[str, Agent], active_name: str) -> Agent | None:
    """The agent to resume a run with whose active agent is ``active_name``: the first
    of ``agents`` whose handoff graph holds it, else the first one (``None`` when empty)."""
    for agent in agents.values():
        if active_name in reachable_agents(agent):
            return agent
    return next(iter(agents.values()), None)
