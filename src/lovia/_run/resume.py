"""Finding a run's active agent again by name."""

from __future__ import annotations

import logging
from collections import deque

from ..agent import Agent
from ..errors import UserError

__all__ = ["find_agent", "reachable_agents", "replay_agent"]

log = logging.getLogger("lovia.resume")


def reachable_agents(entry: Agent) -> dict[str, Agent]:
    """Every agent reachable from ``entry`` through handoffs, by name (first found wins)."""
    found: dict[str, Agent] = {}
    queue: deque[Agent] = deque([entry])
    while queue:
        agent = queue.popleft()
        if agent.name in found:
            continue
        found[agent.name] = agent
        queue.extend(h.target for h in agent.handoffs)
    return found


def find_agent(entry: Agent, name: str) -> Agent:
    """The agent named ``name`` in ``entry``'s handoff graph; ``UserError`` if gone."""
    agents = reachable_agents(entry)
    agent = agents.get(name)
    if agent is None:
        raise UserError(
            f"cannot resume: the run's active agent {name!r} is not reachable from "
            f"{entry.name!r} (known: {', '.join(sorted(agents))})",
            hint="deploy an agent with that name in the handoff graph, or restart the run "
            "with if_run_exists='restart'",
        )
    return agent


def replay_agent(entry: Agent, name: str) -> Agent:
    """Like ``find_agent``, but a completed run falls back to ``entry`` with a warning."""
    agent = reachable_agents(entry).get(name)
    if agent is None:
        log.warning(
            "replaying a completed run whose agent %r is gone; reporting %r as its final agent",
            name,
            entry.name,
        )
        return entry
    return agent
