"""Finding a run's active agent again by name."""

from __future__ import annotations

import logging
from collections import deque

from ..agent import Agent
from ..errors import UserError

__all__ = ["find_agent", "find_handoff_target", "reachable_agents", "replay_agent"]

log = logging.getLogger("lovia.resume")


def _walk(entry: Agent) -> tuple[dict[str, Agent], list[str]]:
    """Every agent reachable from ``entry`` by name (first found wins), and the names that
    two different agents share."""
    found: dict[str, Agent] = {}
    shared: list[str] = []
    seen: set[int] = set()
    queue: deque[Agent] = deque([entry])
    while queue:
        agent = queue.popleft()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        first = found.setdefault(agent.name, agent)
        if first is not agent:
            if agent.name not in shared:
                shared.append(agent.name)
            continue
        queue.extend(h.target for h in agent.handoffs)
    return found, shared


def reachable_agents(entry: Agent) -> dict[str, Agent]:
    """Every agent reachable from ``entry`` through handoffs, by name (first found wins)."""
    return _walk(entry)[0]


def find_agent(entry: Agent, name: str) -> Agent:
    """The agent named ``name`` in ``entry``'s handoff graph; ``UserError`` if gone, or if
    two different agents in the graph share a name (a checkpoint names its agent only)."""
    agents, shared = _walk(entry)
    if shared:
        raise UserError(
            f"cannot resume: two different agents named {shared[0]!r} are reachable from "
            f"{entry.name!r}, and a checkpoint records its active agent by name only",
            hint="give every agent in the handoff graph its own name",
        )
    agent = agents.get(name)
    if agent is None:
        raise UserError(
            f"cannot resume: the run's active agent {name!r} is not reachable from "
            f"{entry.name!r} (known: {', '.join(sorted(agents))})",
            hint="deploy an agent with that name in the handoff graph, or restart the run "
            "with if_run_exists='restart'",
        )
    return agent


def find_handoff_target(run_id: str, agent: Agent, name: str) -> Agent:
    """The target of a handoff that fired before the run stopped, among ``agent``'s own
    handoffs; ``UserError`` when it has no handoff to an agent of that name."""
    for handoff in agent.handoffs:
        target: Agent = handoff.target
        if target.name == name:
            return target
    raise UserError(
        f"cannot resume run {run_id!r}: it was handing over to {name!r}, which is not among "
        f"the handoffs of its active agent {agent.name!r}",
        hint="resume with the handoff graph the run started with, or restart the run with "
        "if_run_exists='restart'",
    )


def replay_agent(entry: Agent, name: str) -> Agent:
    """Like ``find_agent``, but a completed run falls back to ``entry`` with a warning (also
    when two different agents share the name)."""
    agents, shared = _walk(entry)
    agent = agents.get(name)
    if agent is None or name in shared:
        # 0.9.119's logger and words (a caplog filter on them keeps working)
        logging.getLogger("lovia.runtime.loop").warning(
            "run.replay: recorded agent %r is %s entry agent %r; attributing the replayed "
            "result to the entry agent",
            name,
            "ambiguous (two agents share the name) from" if agent else "no longer reachable from",
            entry.name,
        )
        return entry
    return agent
