"""A Ctrl-C at any point of ``lovia``'s ``main`` is exit status 130 without a traceback: a real
SIGINT, sent by the process to itself at a chosen point, while the commands' modules load,
while the arguments are read and while an error is printed (before, only the command's own
work was covered: the first two printed a ``KeyboardInterrupt`` traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
    done = subprocess.run(
        [sys.executable, "-c", CHILD, point, str(db)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr


def test_python_m_lovia_is_the_lovia_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lovia", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("lovia "), done.stderr
