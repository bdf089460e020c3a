"""``LoviaError.exit_status``: the status ``lovia`` exits with when an error ends a command.

Every lovia error has it (2 unless its class says otherwise), so a program's own error class
can choose the status its command ends with; before, only one subclass declared it and the CLI
looked it up with ``getattr``.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import lovia.errors
from lovia.cli import EXIT_ERROR
from lovia.errors import LoviaError, UserError
from lovia.web.scaffold import StartersExist

LOVIA = str(Path(sys.executable).with_name("lovia"))


def test_every_lovia_error_has_an_int_exit_status_two_by_default() -> None:
    classes = [c for _, c in inspect.getmembers(lovia.errors, inspect.isclass)]
    errors = [c for c in classes if issubclass(c, LoviaError)]
    assert len(errors) > 10
    for cls in errors:
        assert cls.exit_status == EXIT_ERROR == 2, cls
    assert LoviaError("boom").exit_status == 2
    assert UserError("boom", hint="h").exit_status == 2
    assert StartersExist("there").exit_status == 1  # init-ui's refusal, as 0.9.119's


def test_one_error_can_carry_its_own_status() -> None:
    assert LoviaError("boom", exit_status=5).exit_status == 5
    assert LoviaError("boom").exit_status == 2  # the class default is untouched


def test_the_cli_exits_with_the_status_of_a_programs_own_error(tmp_path: Path) -> None:
    (tmp_path / "jobs.py").write_text(
        "from lovia.errors import LoviaError\n"
        "class NotConfigured(LoviaError):\n"
        "    exit_status = 3\n"
        "raise NotConfigured('set JOBS_DSN first', hint='export JOBS_DSN=...')\n"
    )
    done = subprocess.run(
        [LOVIA, "worker", "--app", "jobs:queue"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "set JOBS_DSN first" in done.stderr
    assert "export JOBS_DSN=..." in done.stderr
