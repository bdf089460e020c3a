"""``Runner``: the facade over the run driver (``run``, ``run_sync``, ``stream``)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..agent import Agent, install_runtime
from ..approvals import ApprovalChannel
from ..errors import UserError
from ..log_config import CURRENT_AGENT, agent_tag
from .emit import Channel
from .handle import RunHandle
from .loop import RunDriver, RunOptions
from .result import RunResult

__all__ = ["Runner", "UnknownArgument"]


class UnknownArgument(UserError, TypeError):
    """A keyword ``Runner.run``/``stream``/``run_sync`` does not take (also a ``TypeError``,
    as Python raises for 0.9.119's keyword-only signature)."""


class Runner:
    """Run an agent. ``run``, ``run_sync`` and ``stream`` take the same arguments:

    ``deps``, ``output_type`` (overrides the agent's for this run), ``extra_instructions``
    (appended to the system prompt), ``max_turns``, ``budget`` (``RunBudget``),
    ``cancel_token``, ``mailbox`` (``Mailbox``), ``retry`` (``RetryPolicy``),
    ``context_policy``, ``session`` + ``session_id``, ``checkpoint`` (``CheckpointOptions``)
    and ``tracer``.
    """

    @staticmethod
    async def run(agent: Agent, input: Any, **options: Any) -> RunResult:
        """Run ``agent`` on ``input`` (a string, a list of messages/entries/parts; ``[]`` is
        "no new input") until it gives a final answer; raises the run's error."""
        driver = RunDriver(_agent(agent), input, _options(options))
        tag = CURRENT_AGENT.set(agent.name)  # agent_tag's work, without a context manager
        try:
            return await driver.run()
        finally:
            CURRENT_AGENT.reset(tag)

    @staticmethod
    def run_sync(agent: Agent, input: Any, **options: Any) -> RunResult:
        """``Runner.run`` for code with no running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(Runner.run(agent, input, **options))
        raise UserError(
            "Runner.run_sync() cannot be called from a running event loop",
            hint="use 'await Runner.run(...)' in async code",
        )

    @staticmethod
    def stream(agent: Agent, input: Any, **options: Any) -> RunHandle:
        """A handle on a run that starts when you iterate it (or await ``result()``)."""
        opts = _options(options)
        approvals = ApprovalChannel()

        async def start(channel: Channel) -> Any:
            driver = RunDriver(_agent(agent), input, opts, channel=channel, approvals=approvals)
            with agent_tag(agent.name):
                return await driver.run()

        return RunHandle(start, opts.cancel_token, approvals)


def _agent(agent: Any) -> Agent:
    """The entry agent, or UserError (a stream turns it into its one RunFailed)."""
    if not isinstance(agent, Agent):
        raise UserError(
            f"Runner.run needs an Agent, got {type(agent).__name__}",
            hint="pass Agent(name=..., ...) as the first argument",
        )
    return agent


_KNOWN = frozenset(RunOptions.__slots__) - {"parent_usage"}


def _options(options: dict[str, Any]) -> RunOptions:
    parent_usage = None
    if "_parent_usage" in options:  # Agent.as_tool's sub-runs only
        options = dict(options)
        parent_usage = options.pop("_parent_usage")
    if not _KNOWN.issuperset(options):
        unknown = sorted(set(options) - _KNOWN)
        import difflib

        name = unknown[0]
        close = difflib.get_close_matches(name, sorted(_KNOWN), n=1)
        raise UnknownArgument(
            f"Runner got an unknown argument {name!r}",
            hint=f"did you mean {close[0]!r}?"
            if close
            else "known arguments: " + ", ".join(sorted(_KNOWN)),
        )
    opts = RunOptions(**options)
    opts.parent_usage = parent_usage
    return opts


install_runtime(Runner)
