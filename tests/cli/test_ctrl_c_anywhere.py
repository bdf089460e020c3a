"""A Ctrl-C at any point of ``lovia``'s ``main`` is exit status 130 without a traceback: a real
SIGINT, sent by the process to itself at a chosen point, while the commands' modules load,
while the arguments are read and while an error is printed (before, only the command's own
work was covered: the first two printed a ``KeyboardInterrupt`` traceback).

The children start with SIGINT at its default, as a command typed in a terminal does, whatever
the test run inherited: under ``nohup`` or ``&`` a shell starts programs with SIGINT ignored,
and Python then installs no Ctrl-C handler at all (issue 36: these tests failed there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# execs the program given after it with SIGINT at its default (an exec keeps an ignored signal
# ignored, and a default one default): Python then turns SIGINT into KeyboardInterrupt
AS_IN_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` as a terminal would start it, its output captured."""
    return subprocess.run(
        [sys.executable, "-c", AS_IN_A_TERMINAL, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


CHILD = """
import argparse, builtins, os, signal, sys
import lovia.cli as cli

def ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)  # raised at the next bytecode, inside the wrapped call

point = sys.argv[1]
if point == "loading":
    build = cli.build_parser
    def build_parser():
        ctrl_c()
        return build()
    cli.build_parser = build_parser
elif point == "parsing":
    parse = argparse.ArgumentParser.parse_known_args
    def parse_known_args(self, *args, **kwargs):
        ctrl_c()
        return parse(self, *args, **kwargs)
    argparse.ArgumentParser.parse_known_args = parse_known_args
elif point == "error":
    say = builtins.print
    def print(*args, **kwargs):
        if kwargs.get("file") is sys.stderr:
            ctrl_c()
        return say(*args, **kwargs)
    builtins.print = print
sys.exit(cli.main(["runs", "show", "nosuch", "--db", sys.argv[2]]))
"""


@pytest.mark.parametrize("point", ["loading", "parsing", "error"])
def test_ctrl_c_in_main_is_130_without_a_traceback(point: str, tmp_path: Path) -> None:
    db = tmp_path / "none.db"  # not there: the command prints an error
    done = run("-c", CHILD, point, str(db))
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr


def test_python_m_lovia_is_the_lovia_command() -> None:
    done = run("-m", "lovia", "--version")
    assert done.returncode == 0 and done.stdout.startswith("lovia "), done.stderr


# The console script the installer writes for ``[project.scripts]``, with a real SIGINT sent
# while ``import lovia`` is half done (when its transcript module is looked up): that import
# runs before ``lovia.cli.main`` can catch anything, and takes a noticeable moment.
LAUNCH = """
import importlib.abc, os, signal, sys

class CtrlCWhileLoading(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "lovia.transcript":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlCWhileLoading())
from {module} import {attr}
sys.exit({attr}())
"""


def _console_script() -> tuple[str, str]:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8")
    scripts = pyproject.split("[project.scripts]", 1)[1]
    target = scripts.split("lovia = ", 1)[1].split(maxsplit=1)[0].strip('"')
    module, _, attr = target.partition(":")
    return module, attr


def test_ctrl_c_while_lovia_is_still_loading_is_130_without_a_traceback() -> None:
    module, attr = _console_script()
    done = run("-c", LAUNCH.format(module=module, attr=attr), "--version")
    assert done.returncode == 130, done.stderr
    assert done.stderr == "" and done.stdout == ""


def test_the_console_script_runs_the_command() -> None:
    module, attr = _console_script()
    code = f"import sys\nfrom {module} import {attr}\nsys.exit({attr}())"
    done = run("-c", code, "--version")
    assert done.returncode == 0 and done.stdout.startswith("lovia "), done.stderr
