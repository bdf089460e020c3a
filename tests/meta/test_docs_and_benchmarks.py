"""Docs cover the public API, and every benchmark still runs (in its quick mode)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

import lovia

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def test_every_public_name_is_documented() -> None:
    text = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    missing = [name for name in lovia.__all__ if name not in text]
    assert not missing, f"public names missing from docs/: {missing}"


def test_readme_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```sh") + 1 : lines.index("```sh") + 3]
    assert block[0].startswith("make web") or block[0].startswith("make hello"), block
    assert block[1].startswith("make test"), block


@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.name for p in BENCHMARKS])
def test_benchmark_runs_in_quick_mode_and_prints_json(script: pathlib.Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    start = done.stdout.index("{")
    figures = json.loads(done.stdout[start:])
    assert isinstance(figures, dict) and figures


def test_compare_in_rounds_reports_each_ratio_as_a_median_within_its_range() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--quick", "--rounds", "3"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["rounds"] == 3 and len(result["a"]["figures"]) == 3
    ratios, spread = result["ratios_a_over_b"], result["ratio_range"]
    assert ratios and set(spread) <= set(ratios)
    for key, (low, high) in spread.items():
        assert low <= ratios[key] <= high, key
