"""lovia 0.9.119 programs run unchanged here (issue 12): what holds across the program groups.

The programs' own checks are in ``program_checks.py``, run by one ``test_programs_*.py`` file
per group of programs.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path

import pytest

from .departures import DEPARTURES
from .harness import load_expected, programs, reference_python
from .known_gaps import KNOWN_GAPS
from .program_checks import GROUPS, group, run_all

PROGRAMS = programs()
HERE = Path(__file__).resolve().parent


def test_every_program_is_checked_by_exactly_one_group_file() -> None:
    files = sorted(HERE.glob("test_programs_*.py"))
    assert len(files) == len(GROUPS), [f.name for f in files]
    checked: list[str] = []
    for file in files:
        module = importlib.import_module(f"{__package__}.{file.stem}")
        assert module.PROGRAMS, f"{file.name} checks no program"
        checked += module.PROGRAMS
    assert sorted(checked) == PROGRAMS
    assert sorted(n for i in range(len(GROUPS)) for n in group(i)) == PROGRAMS


@pytest.mark.parametrize("name", sorted(KNOWN_GAPS))
def test_known_gaps_still_differ(name: str) -> None:
    """A gap that was closed must leave known_gaps.py, so the check guards it again."""
    with tempfile.TemporaryDirectory() as tmp:
        got = run_all(sys.executable, [name], ours=True, scratch=Path(tmp))[name].summary or {}
        python = reference_python()
        live = run_all(python, [name], ours=False, scratch=Path(tmp)) if python else None
    expected = live[name].summary if live is not None else load_expected(name)
    assert expected is not None
    closed = [k for k in KNOWN_GAPS[name] if expected.get(k) == got.get(k, "<missing>")]
    assert not closed, f"{name}: {closed} now match 0.9.119; remove them from known_gaps.py"


def test_every_departure_names_a_program_and_a_reason() -> None:
    for name, keys in DEPARTURES.items():
        assert name in PROGRAMS, name
        for key, departure in keys.items():
            assert departure.reason.strip(), f"{name}:{key} has no reason"
