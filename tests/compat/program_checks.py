"""The checks of the lovia 0.9.119 programs (issue 12), shared by the ``test_programs_*.py``
files.

Every program in ``programs/`` is a small script written the way a 0.9.119 user writes one,
printing a JSON summary. ``expected/`` holds what 0.9.119 printed (``python -m
tests.compat.harness`` re-records it from the reference venv). Each program must print the same
here, key by key, except for the deliberate departures in ``departures.py``.

Each program runs in a fresh interpreter, under this checkout and under 0.9.119: minutes in
all. The programs are split into ``GROUPS``, one test file each, so that the test processes
(``make test`` hands out whole files) share them. A group file sets ``PROGRAMS`` and imports
the tests and fixtures below; ``test_programs.py`` checks that the groups hold every program.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .departures import DEPARTURES
from .harness import Outcome, load_expected, programs, reference_python, run_program
from .known_gaps import KNOWN_GAPS

# the programs' numbers, first and last, of each group (the last group takes every later one)
GROUPS: list[tuple[int, int]] = [(1, 16), (17, 30), (31, 45), (46, 60), (61, 999)]


def group(index: int) -> list[str]:
    """The programs of ``GROUPS[index]``, by name."""
    first, last = GROUPS[index]
    return [n for n in programs() if first <= int(n[1:].split("_")[0]) <= last]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``name``: each program of the test's file (its ``PROGRAMS``)."""
    if "name" in metafunc.fixturenames:
        metafunc.parametrize("name", metafunc.module.PROGRAMS)


def run_all(
    python: str | Path, names: list[str], *, ours: bool, scratch: Path
) -> dict[str, Outcome]:
    """Every program, a few at a time (each is a fresh interpreter, mostly import time)."""
    workers = min(8, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {n: pool.submit(run_program, n, python, scratch / n, ours=ours) for n in names}
        return {n: f.result() for n, f in futures.items()}


@pytest.fixture(scope="module")
def ours_outcomes(request: pytest.FixtureRequest) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        yield run_all(sys.executable, request.module.PROGRAMS, ours=True, scratch=Path(tmp))


@pytest.fixture(scope="module")
def live_reference(request: pytest.FixtureRequest) -> Any:
    """The file's programs' outcomes under lovia 0.9.119, or None without the reference venv."""
    python = reference_python()
    if python is None:
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield run_all(python, request.module.PROGRAMS, ours=False, scratch=Path(tmp))


@pytest.fixture
def reference_outcomes(live_reference: dict[str, Outcome] | None) -> dict[str, Outcome]:
    if live_reference is None:
        pytest.skip(
            "no lovia 0.9.119 venv: run scripts/reference-venv.sh (or set LOVIA_REFERENCE_PYTHON)"
        )
    return live_reference


def differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    lines = []
    for key in sorted(set(expected) | set(got)):
        want = expected.get(key, "<missing>")
        have = got.get(key, "<missing>")
        if want != have:
            lines.append(f"{key}:\n  expected {json.dumps(want)}\n  got      {json.dumps(have)}")
    return lines


def _with_departures(name: str, expected: dict[str, Any]) -> dict[str, Any]:
    adjusted = dict(expected)
    for key, departure in DEPARTURES.get(name, {}).items():
        adjusted[key] = departure.ours
    return adjusted


def _without_gaps(name: str, summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in KNOWN_GAPS.get(name, ())}


def test_program_prints_what_0_9_119_prints(
    name: str, ours_outcomes: dict[str, Outcome], live_reference: dict[str, Outcome] | None
) -> None:
    """Against a live 0.9.119 when its venv exists, else against its recorded output."""
    live = live_reference[name].summary if live_reference is not None else None
    expected = live if live is not None else load_expected(name)
    assert expected is not None, (
        f"no expected/{name}.json: record it with `python -m tests.compat.harness record {name}`"
    )
    outcome = ours_outcomes[name]
    assert outcome.summary is not None, f"{name} did not print a summary:\n{outcome.describe()}"
    diff = differences(
        _without_gaps(name, _with_departures(name, expected)), _without_gaps(name, outcome.summary)
    )
    assert not diff, (
        f"{name} differs from lovia 0.9.119:\n" + "\n".join(diff) + f"\n\n{outcome.stderr[-6000:]}"
    )


def test_recorded_output_is_what_0_9_119_prints(
    name: str, reference_outcomes: dict[str, Outcome]
) -> None:
    """The recorded expectations (and the departures' reference values) match a live 0.9.119."""
    outcome = reference_outcomes[name]
    assert outcome.summary is not None, f"{name} broke on lovia 0.9.119:\n{outcome.describe()}"
    diff = differences(load_expected(name) or {}, outcome.summary)
    assert not diff, f"expected/{name}.json is stale; re-record it:\n" + "\n".join(diff)
    for key, departure in DEPARTURES.get(name, {}).items():
        assert key in outcome.summary, (
            f"departure {name}:{key} names a key the program no longer prints"
        )
        if departure.has_reference():
            assert outcome.summary[key] == departure.reference, (
                f"0.9.119 no longer prints the departure's value for {name}:{key}"
            )
