"""``Case`` and ``evaluate``: run an agent on each case, check every sample, report."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..agent import Agent
from ..errors import UserValueError
from ..messages import Message
from ..runner import Runner
from ..usage import Usage
from .checks import Check, run_check
from .report import CaseResult, Report, SampleResult

__all__ = ["AgentSource", "Case", "evaluate"]

log = logging.getLogger("lovia.eval")

AgentSource: TypeAlias = Agent | Callable[[], Agent]
"""An agent, or a function with no arguments that builds a fresh one (called per sample)."""

_NAME_CHARS = 48


def _label(input: str | Sequence[Message]) -> str:
    if isinstance(input, str):
        text = input
    else:
        texts = [m.text for m in input if getattr(m, "role", None) == "user" and m.text]
        texts = texts or [m.text for m in input if m.text]
        text = texts[0] if texts else ""
    text = " ".join(text.split())
    if not text:
        return "case"
    return text if len(text) <= _NAME_CHARS else text[: _NAME_CHARS - 1] + "…"


@dataclass
class Case:
    """One input and the checks every run of it must pass.

    ``samples`` runs it several times and ``pass_threshold`` is the share of passing samples
    the case needs. ``model`` runs this case on another model (a ``ScriptedProvider`` gives
    it a script of its own); ``timeout`` caps each sample's wall time (a timeout fails that
    sample). ``deps``, ``output_type`` and ``max_turns`` go to the run; ``metadata`` is
    carried into the result untouched.
    """

    input: str | list[Message]
    checks: Sequence[Check] = ()
    name: str = ""
    samples: int = 1
    pass_threshold: float = 1.0
    deps: Any = None
    output_type: Any = None
    model: Any = None
    max_turns: int = 50
    timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = _label(self.input)
        where = f"Case {self.name!r}"
        if not isinstance(self.samples, int) or self.samples < 1:
            raise UserValueError(f"{where}: samples must be 1 or more, got {self.samples!r}")
        if not 0.0 <= self.pass_threshold <= 1.0:
            raise UserValueError(
                f"{where}: pass_threshold must be within [0, 1], got {self.pass_threshold!r}"
            )
        if self.timeout is not None and not self.timeout > 0:
            raise UserValueError(
                f"{where}: timeout must be a positive number of seconds, got {self.timeout!r}"
            )
        self.checks = tuple(self.checks)


def _agent_for(source: AgentSource, case: Case) -> Agent:
    agent = source if isinstance(source, Agent) else source()
    if case.model is not None:
        agent = agent.clone(model=case.model)
    return agent


def _error_text(exc: BaseException) -> str:
    message = str(exc).split("\n", 1)[0]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _cost(price: Callable[[Usage], float] | None, usage: Usage) -> float | None:
    if price is None:
        return None
    try:
        return float(price(usage))
    except Exception:
        log.warning("eval: the price function failed; the sample has no cost", exc_info=True)
        return None


async def _sample(
    source: AgentSource, case: Case, price: Callable[[Usage], float] | None
) -> SampleResult:
    started = time.perf_counter()
    options: dict[str, Any] = {"deps": case.deps, "max_turns": case.max_turns}
    if case.output_type is not None:
        options["output_type"] = case.output_type
    try:
        agent = _agent_for(source, case)
        run = Runner.run(agent, case.input, **options)
        result = await (asyncio.wait_for(run, case.timeout) if case.timeout else run)
    except asyncio.TimeoutError:
        # a failed sample is priced too (on the usage it records, none), as in 0.9.119: with
        # price= every sample's cost is a number
        return SampleResult(
            latency=time.perf_counter() - started,
            error=f"timeout: the run took longer than {case.timeout}s",
            cost=_cost(price, Usage()),
        )
    except Exception as exc:
        return SampleResult(
            latency=time.perf_counter() - started,
            error=_error_text(exc),
            cost=_cost(price, Usage()),
        )
    latency = time.perf_counter() - started
    checks = await asyncio.gather(*(run_check(c, result) for c in case.checks))
    return SampleResult(
        checks=list(checks),
        output=result.output,
        turns=result.turns,
        usage=result.usage,
        latency=latency,
        cost=_cost(price, result.usage),
    )


async def _case(
    source: AgentSource, case: Case, price: Callable[[Usage], float] | None
) -> CaseResult:
    samples = [await _sample(source, case, price) for _ in range(case.samples)]
    return CaseResult(
        name=case.name,
        samples=samples,
        pass_threshold=case.pass_threshold,
        metadata=dict(case.metadata),
    )


async def evaluate(
    agent: AgentSource,
    cases: Case | Iterable[Case],
    *,
    concurrency: int = 4,
    fail_fast: bool = False,
    price: Callable[[Usage], float] | None = None,
) -> Report:
    """Run every case (``concurrency`` at a time; a case's samples one after another) and
    return the ``Report``, in the cases' order.

    A sample whose run raises or times out records the ``error`` and fails alone; the suite
    always completes. ``fail_fast`` runs the cases one by one and stops after the first that
    fails. ``price(usage)`` gives each sample a cost.
    """
    if not isinstance(concurrency, int) or concurrency < 1:
        raise UserValueError(f"evaluate(): concurrency must be 1 or more, got {concurrency!r}")
    todo = [cases] if isinstance(cases, Case) else list(cases)
    if fail_fast:
        done: list[CaseResult] = []
        for case in todo:
            done.append(await _case(agent, case, price))
            if not done[-1].passed:
                break
        return Report(cases=done)
    gate = asyncio.Semaphore(concurrency)

    async def bounded(case: Case) -> CaseResult:
        async with gate:
            return await _case(agent, case, price)

    return Report(cases=list(await asyncio.gather(*(bounded(c) for c in todo))))
