"""``Runner``: the facade over the run loop (``run``, ``run_sync``, ``stream``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..agent import Agent
from ..context.policy import ContextPolicy
from ..errors import UserError
from ..events import RunEvent
from ..stores.checkpoint import CheckpointOptions
from ..stores.session import Session
from .context import CancelToken
from .handle import RunHandle
from .loop import RunDriver
from .result import RunResult

__all__ = ["Runner"]


class Runner:
    """Run an agent. Every method takes the same arguments."""

    @staticmethod
    async def run(
        agent: Agent,
        input: Any,
        *,
        deps: Any = None,
        max_turns: int = 50,
        cancel_token: CancelToken | None = None,
        context_policy: ContextPolicy | None = None,
        session: Session | None = None,
        session_id: str | None = None,
        checkpoint: CheckpointOptions | None = None,
    ) -> RunResult:
        """Run ``agent`` on ``input`` (a string, or a list of messages/entries; ``[]`` is
        "no new input") until it gives a final answer."""
        driver = RunDriver(
            agent,
            input,
            deps=deps,
            max_turns=max_turns,
            cancel_token=cancel_token,
            context_policy=context_policy,
            session=session,
            session_id=session_id,
            checkpoint=checkpoint,
        )
        return await driver.run()

    @staticmethod
    def run_sync(agent: Agent, input: Any, **kwargs: Any) -> RunResult:
        """``Runner.run`` for code with no running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(Runner.run(agent, input, **kwargs))
        raise UserError(
            "Runner.run_sync was called inside a running event loop",
            hint="use 'await Runner.run(...)' in async code",
        )

    @staticmethod
    def stream(
        agent: Agent,
        input: Any,
        *,
        cancel_token: CancelToken | None = None,
        **kwargs: Any,
    ) -> RunHandle:
        """Start a run and return a handle: iterate it for events, ``await .result()``."""
        token = cancel_token or CancelToken()

        def start(sink: Callable[[RunEvent], None]) -> Any:
            driver = RunDriver(agent, input, cancel_token=token, sink=sink, **kwargs)
            return driver.run()

        return RunHandle(start, token)
