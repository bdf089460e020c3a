"""Evals: does an agent answer correctly, pick the right tool, follow the brief?

A ``Case`` pairs an input with checks; a check is any callable ``(RunResult) -> CheckResult |
bool`` (the matchers here, ``llm_judge`` and functions of your own alike); ``evaluate`` runs
the cases and returns a ``Report`` to print, assert on, save, and compare with a baseline.
``samples`` and ``pass_threshold`` measure a non-deterministic agent instead of retrying it.
"""

from __future__ import annotations

from .checks import (
    Check,
    CheckResult,
    all_of,
    any_of,
    contains,
    equals,
    matches,
    max_tokens,
    max_turns,
    no_error,
    not_contains,
    regex,
    run_check,
    tool_called,
    tool_not_called,
    weighted,
)
from .judge import Verdict, llm_judge
from .report import CaseResult, Diff, Report, SampleResult
from .runner import AgentSource, Case, evaluate

__all__ = [
    "AgentSource",
    "Case",
    "CaseResult",
    "Check",
    "CheckResult",
    "Diff",
    "Report",
    "SampleResult",
    "Verdict",
    "all_of",
    "any_of",
    "contains",
    "equals",
    "evaluate",
    "llm_judge",
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
