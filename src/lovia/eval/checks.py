"""Checks: callables ``(RunResult) -> CheckResult | bool`` (sync or async) that judge a run.

The built-in matchers below, ``llm_judge`` and any function of your own are the same thing;
``run_check`` turns whatever a check does (a bool, a ``CheckResult``, an exception) into one
``CheckResult``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel

from ..errors import UserValueError
from ..transcript import ToolCallEntry, ToolResultEntry

if TYPE_CHECKING:
    from .._run_types import RunResult

__all__ = [
    "Check",
    "CheckResult",
    "all_of",
    "any_of",
    "check_name",
    "contains",
    "equals",
    "matches",
    "max_tokens",
    "max_turns",
    "no_error",
    "not_contains",
    "regex",
    "run_check",
    "tool_called",
    "tool_not_called",
    "weighted",
]

_SHOWN = 200  # how much of an output a reason quotes


@dataclass
class CheckResult:
    """What one check said about one run: ``passed``, an optional graded ``score`` in
    ``[0, 1]``, and a ``reason`` when it failed."""

    name: str
    passed: bool
    score: float | None = None
    reason: str = ""


CheckOutcome: TypeAlias = "CheckResult | bool"
Check: TypeAlias = Callable[["RunResult"], "CheckOutcome | Awaitable[CheckOutcome]"]


def check_name(check: Any) -> str:
    """The label a check reports under: its ``__name__`` (set by the built-ins), else its
    class name."""
    name = getattr(check, "__name__", None)
    return name if isinstance(name, str) and name else type(check).__name__


async def run_check(check: Check, result: RunResult) -> CheckResult:
    """Run ``check`` on ``result`` and always come back with a ``CheckResult``: a check that
    raises fails itself (the exception is the reason) and never the suite."""
    name = check_name(check)
    try:
        got: Any = check(result)
        if inspect.isawaitable(got):
            got = await got
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return CheckResult(name=name, passed=False, reason=f"check raised {_describe(exc)}")
    if isinstance(got, CheckResult):
        return got if got.name else dataclasses.replace(got, name=name)
    return CheckResult(name=name, passed=bool(got))


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _named(fn: Callable[..., Any], name: str) -> Check:
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def _verdict(ok: bool, why: str) -> CheckResult:
    """A result for the check it is returned from (``run_check`` fills the name in); ``why``
    is kept only when it failed."""
    return CheckResult(name="", passed=ok, reason="" if ok else why)


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


# -- the output ---------------------------------------------------------------------------


def contains(value: str, *, ignore_case: bool = False) -> Check:
    """Passes when ``str(output)`` contains ``value``."""

    def check(result: RunResult) -> CheckResult:
        text = str(result.output)
        found = value.lower() in text.lower() if ignore_case else value in text
        reason = "" if found else f"not found in output: {_shown(text)}"
        return CheckResult(name="", passed=found, reason=reason)

    return _named(check, f"contains({value!r})")


def not_contains(value: str, *, ignore_case: bool = False) -> Check:
    """Passes when ``str(output)`` does not contain ``value``."""

    def check(result: RunResult) -> CheckResult:
        text = str(result.output)
        found = value.lower() in text.lower() if ignore_case else value in text
        reason = f"found in output: {_shown(text)}" if found else ""
        return CheckResult(name="", passed=not found, reason=reason)

    return _named(check, f"not_contains({value!r})")


def regex(pattern: str, *, flags: int = 0) -> Check:
    """Passes when ``pattern`` matches somewhere in ``str(output)`` (``re.search``)."""
    compiled = re.compile(pattern, flags)

    def check(result: RunResult) -> CheckResult:
        text = str(result.output)
        if compiled.search(text):
            return CheckResult(name="", passed=True)
        return CheckResult(name="", passed=False, reason=f"no match in output: {_shown(text)}")

    return _named(check, f"regex({pattern!r})")


def equals(value: Any) -> Check:
    """Passes when the output equals ``value`` (``==``; a structured output compares as its
    model)."""

    def check(result: RunResult) -> CheckResult:
        same = bool(result.output == value)
        return CheckResult(name="", passed=same, reason="" if same else f"got: {result.output!r}")

    return _named(check, f"equals({value!r})")


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _subset(spec: Any, value: Any) -> bool:
    value = _plain(value)
    if isinstance(spec, Mapping):
        return isinstance(value, Mapping) and all(
            key in value and _subset(expected, value[key]) for key, expected in spec.items()
        )
    if isinstance(spec, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(spec) == len(value)
            and all(_subset(s, v) for s, v in zip(spec, value, strict=True))
        )
    return bool(spec == value)


def matches(spec: Mapping[str, Any] | Callable[[Any], bool]) -> Check:
    """Passes when the output fits ``spec``: a mapping is matched as a subset, recursively
    (extra fields are fine, lists must have the same length), a callable is asked."""
    if callable(spec) and not isinstance(spec, Mapping):
        predicate = spec

        def ask(result: RunResult) -> CheckResult:
            ok = bool(predicate(result.output))
            return _verdict(ok, f"got: {_shown(result.output)}")

        return _named(ask, f"matches({check_name(predicate)})")

    def check(result: RunResult) -> CheckResult:
        return _verdict(_subset(spec, result.output), f"got: {_shown(result.output)}")

    return _named(check, f"matches({spec!r})")


# -- how the run went ---------------------------------------------------------------------


def _called(result: RunResult, name: str) -> bool:
    return any(isinstance(e, ToolCallEntry) and e.name == name for e in result.entries)


def tool_called(name: str) -> Check:
    """Passes when the run called the tool ``name`` at least once."""

    def check(result: RunResult) -> CheckResult:
        ok = _called(result, name)
        return CheckResult(name="", passed=ok, reason="" if ok else "tool was never called")

    return _named(check, f"tool_called({name!r})")


def tool_not_called(name: str) -> Check:
    """Passes when the run never called the tool ``name``."""

    def check(result: RunResult) -> CheckResult:
        called = _called(result, name)
        return CheckResult(name="", passed=not called, reason="tool was called" if called else "")

    return _named(check, f"tool_not_called({name!r})")


def max_turns(n: int) -> Check:
    """Passes when the run took at most ``n`` turns."""

    def check(result: RunResult) -> CheckResult:
        ok = result.turns <= n
        reason = "" if ok else f"took {result.turns} turns, more than {n}"
        return CheckResult(name="", passed=ok, reason=reason)

    return _named(check, f"max_turns({n})")


def max_tokens(n: int) -> Check:
    """Passes when the run used at most ``n`` tokens in all (input and output)."""

    def check(result: RunResult) -> CheckResult:
        used = result.usage.total_tokens
        return _verdict(used <= n, f"used {used} tokens, more than {n}")

    return _named(check, f"max_tokens({n})")


def no_error() -> Check:
    """Passes when no tool call of the run failed. (A run that raised never reaches its
    checks: that sample already failed with its ``error``.)"""

    def check(result: RunResult) -> CheckResult:
        failed = [e for e in result.entries if isinstance(e, ToolResultEntry) and e.is_error]
        if not failed:
            return CheckResult(name="", passed=True)
        shown = "; ".join(_shown(e.output) for e in failed[:3])
        return _verdict(False, f"{len(failed)} tool call(s) failed: {shown}")

    return _named(check, "no_error")


# -- composition --------------------------------------------------------------------------


async def _all(checks: tuple[Check, ...], result: RunResult) -> list[CheckResult]:
    return list(await asyncio.gather(*(run_check(c, result) for c in checks)))


def all_of(*checks: Check, name: str = "all_of") -> Check:
    """Passes when every one of ``checks`` passes (and when there are none)."""

    async def check(result: RunResult) -> CheckResult:
        failed = [r for r in await _all(checks, result) if not r.passed]
        reason = "; ".join(f"{r.name}: {r.reason}" if r.reason else r.name for r in failed)
        return CheckResult(name=name, passed=not failed, reason=reason)

    return _named(check, name)


def any_of(*checks: Check, name: str = "any_of") -> Check:
    """Passes when at least one of ``checks`` passes (never when there are none)."""

    async def check(result: RunResult) -> CheckResult:
        if not checks:
            return CheckResult(name=name, passed=False, reason="no checks provided")
        results = await _all(checks, result)
        if any(r.passed for r in results):
            return CheckResult(name=name, passed=True)
        names = ", ".join(r.name for r in results)
        return CheckResult(name=name, passed=False, reason=f"no alternative passed: {names}")

    return _named(check, name)


def weighted(
    weights: Mapping[Check, float], *, threshold: float = 0.7, name: str = "weighted"
) -> Check:
    """One graded verdict from several checks: the weighted mean of their scores (a check
    without a score counts 1 when it passes, 0 when not), passing at ``threshold``."""
    if not weights:
        raise UserValueError("weighted() needs at least one check", hint="weighted({check: 1.0})")
    if any(w < 0 for w in weights.values()):
        raise UserValueError("weighted(): a weight cannot be negative")
    total = float(sum(weights.values()))
    if total <= 0:
        raise UserValueError("weighted(): the weights must add up to more than 0")
    if not 0.0 <= threshold <= 1.0:
        raise UserValueError(f"weighted(): threshold must be within [0, 1], got {threshold}")
    pairs = list(weights.items())

    async def check(result: RunResult) -> CheckResult:
        results = await _all(tuple(c for c, _ in pairs), result)
        points = [_points(r) for r in results]
        score = sum(p * w for p, (_, w) in zip(points, pairs, strict=True)) / total
        reason = ", ".join(f"{r.name}={p:.2f}" for r, p in zip(results, points, strict=True))
        return CheckResult(name=name, passed=score >= threshold, score=score, reason=reason)

    return _named(check, name)


def _points(result: CheckResult) -> float:
    if result.score is not None:
        return float(result.score)
    return 1.0 if result.passed else 0.0
