"""``lovia web``: the agent options applied to the served agents, and ``--check``."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys

from ..agent import Agent
from ..chats.setup import _base_url, model_problem, server_problem
from ..settings import RetryPolicy
from .common import DEFAULT_INSTRUCTIONS, no_model_hint

__all__ = ["check_agents", "tune_agents"]


def tune_agents(agents: dict[str, Agent], args: argparse.Namespace) -> dict[str, Agent]:
    """``agents`` with ``--instructions``/``--max-tokens`` (the default agent on
    LOVIA_MODEL only, as in 0.9.119) and ``--max-retries`` (every agent) applied."""
    default_agent = not args.app and not args.demo
    if not default_agent:
        given = [
            flag
            for flag, value in (
                ("--instructions", args.instructions_given),
                ("--instructions-file", args.instructions_file),
                ("--max-tokens", args.max_tokens),
            )
            if value
        ]
        if given:
            which = "--app" if args.app else "--demo"
            print(
                f"lovia web: {which} set; ignoring default-agent options: {', '.join(given)}",
                file=sys.stderr,
            )
    out: dict[str, Agent] = {}
    for name, agent in agents.items():
        changes: dict[str, object] = {}
        if default_agent:
            if args.instructions is not None and agent.instructions == DEFAULT_INSTRUCTIONS:
                changes["instructions"] = args.instructions
            if args.max_tokens is not None:
                changes["settings"] = dataclasses.replace(
                    agent.settings, max_tokens=args.max_tokens
                )
        if args.max_retries is not None:
            base = agent.retry or RetryPolicy()
            changes["retry"] = dataclasses.replace(base, max_attempts=args.max_retries + 1)
        out[name] = agent.clone(**changes) if changes else agent
    return out


def check_agents(agents: dict[str, Agent]) -> int:
    """``--check``: print each agent's model connection and probe its server; 0 when every
    one can be used, its server accepts a connection and does not refuse the API key (its
    model list answers neither 401 nor 403), else 2. Nothing is served."""
    if not agents:
        print("lovia web: no model configured", file=sys.stderr)
        print(f"lovia web: hint: {no_model_hint()}", file=sys.stderr)
        return 2
    ok = True
    for name, agent in agents.items():
        model = agent.model if isinstance(agent.model, str) else type(agent.model).__name__
        print(f"agent {name}: model {model}")
        problem = model_problem(agent)
        if problem is None:
            url = _base_url(agent)
            if url:
                print(f"agent {name}: base URL {url}")
            problem = asyncio.run(server_problem(agent))
        if problem is not None:
            ok = False
            print(f"agent {name}: {problem.message}")
            if problem.hint:
                print(f"agent {name}: hint: {problem.hint}")
        else:
            print(f"agent {name}: ok")
    return 0 if ok else 2
