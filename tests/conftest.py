"""Shared fixtures. Tests never call a real model: the scripted provider stands in."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# Property tests share the machine with servers, subprocesses and a second test process: a
# slow example is load, not a bug (no deadline, no too_slow health check), and CI draws the
# same examples on every run, so a failure there can be rerun as it was.
settings.register_profile(
    "lovia",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("CI", "").lower() == "true",
)
settings.load_profile("lovia")


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that forgets to pass a model must not reach a real endpoint."""
    for name in ("LOVIA_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        if not os.environ.get("LOVIA_LIVE_TESTS"):
            monkeypatch.delenv(name, raising=False)


def pytest_report_header() -> list[str]:
    """Which PostgreSQL the run uses, if any: its tests skip without one (outside CI)."""
    dsn = os.environ.get("LOVIA_TEST_POSTGRES_DSN")
    return [f"postgresql: {dsn}" if dsn else "postgresql: none (LOVIA_TEST_POSTGRES_DSN unset)"]


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
