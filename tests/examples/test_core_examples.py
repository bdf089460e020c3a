"""The core examples run offline, as a user would run them."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("01_hello.py", "Hello! I am a lovia agent"),
        ("02_tools.py", "It is 21C (69.8F) in Paris."),
        ("03_handoff.py", "[billing] Billing here"),
    ],
)
def test_example_runs(name: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
