"""Shared fixtures. Tests never call a real model: the scripted provider stands in."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that forgets to pass a model must not reach a real endpoint."""
    for name in ("LOVIA_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        if not os.environ.get("LOVIA_LIVE_TESTS"):
            monkeypatch.delenv(name, raising=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per skip reason with its count, instead of one line per skipped test."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if not reasons:
        return
    terminalreporter.section("skipped, by reason", sep="-")
    for reason, count in sorted(reasons.items(), key=lambda r: -r[1]):
        terminalreporter.write_line(f"{count:4d} x {reason}")
