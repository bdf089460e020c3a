"""Run a compatibility program under a given interpreter and read its JSON summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROGRAMS_DIR = HERE / "programs"
EXPECTED_DIR = HERE / "expected"
REFERENCE_VENV = ROOT / ".cache" / "reference-venv"
TIMEOUT = 120


def programs() -> list[str]:
    return sorted(p.stem for p in PROGRAMS_DIR.glob("p*.py"))


def reference_python() -> Path | None:
    """The interpreter of the lovia 0.9.119 venv, or None when it is not set up."""
    configured = os.environ.get("LOVIA_REFERENCE_PYTHON")
    candidate = Path(configured) if configured else REFERENCE_VENV / "bin" / "python"
    return candidate if candidate.exists() else None


@dataclass
class Outcome:
    summary: dict[str, Any] | None
    stdout: str
    stderr: str
    returncode: int

    def describe(self) -> str:
        return (
            f"exit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}"
            f"\n--- stderr\n{self.stderr[-6000:]}"
        )


def run_program(name: str, python: str | Path, workdir: Path, *, ours: bool) -> Outcome:
    """Run ``programs/<name>.py`` in ``workdir`` (its files land there).

    ``ours`` puts this checkout's ``src`` first on the path; the reference run gets a clean
    environment so nothing of this project can leak into it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LOVIA_"))}
    if ours:
        # LOVIA_COMPAT_SRC: try the programs against another checkout's src (e.g. a branch)
        env["PYTHONPATH"] = os.environ.get("LOVIA_COMPAT_SRC") or str(ROOT / "src")
    env["PYTHONHASHSEED"] = "0"
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [str(python), str(PROGRAMS_DIR / f"{name}.py")],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    summary = None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        try:
            summary = json.loads(lines[-1])
        except ValueError:
            summary = None
    return Outcome(summary, proc.stdout, proc.stderr, proc.returncode)


def expected_path(name: str) -> Path:
    return EXPECTED_DIR / f"{name}.json"


def load_expected(name: str) -> dict[str, Any] | None:
    path = expected_path(name)
    return json.loads(path.read_text()) if path.exists() else None


def record(names: list[str], python: Path, scratch: Path) -> list[str]:
    """Write ``expected/<name>.json`` from the reference run; returns the names that broke."""
    EXPECTED_DIR.mkdir(exist_ok=True)
    broken = []
    for name in names:
        outcome = run_program(name, python, scratch / name, ours=False)
        if outcome.summary is None:
            broken.append(name)
            continue
        text = json.dumps(outcome.summary, indent=1, sort_keys=True) + "\n"
        expected_path(name).write_text(text)
    return broken


def compare(names: list[str], scratch: Path) -> int:
    """Run ``names`` here and print, per program, the keys that differ from 0.9.119."""
    from .departures import DEPARTURES

    failing = 0
    for name in names:
        expected = load_expected(name) or {}
        for key, departure in DEPARTURES.get(name, {}).items():
            expected[key] = departure.ours
        outcome = run_program(name, sys.executable, scratch / name, ours=True)
        got = outcome.summary
        if got is None:
            failing += 1
            print(f"== {name}: no summary\n{outcome.describe()}")
            continue
        keys = [
            k
            for k in sorted(set(expected) | set(got))
            if expected.get(k, "<missing>") != got.get(k, "<missing>")
        ]
        print(f"== {name}: {'ok' if not keys else 'DIFF ' + ', '.join(keys)}")
        failing += bool(keys)
        for key in keys:
            print(f"   {key}\n     0.9.119: {json.dumps(expected.get(key, '<missing>'))[:2000]}")
            print(f"     here:    {json.dumps(got.get(key, '<missing>'))[:2000]}")
        errors = [
            line
            for line in outcome.stderr.splitlines()
            if line.startswith("--- ") or "Error" in line[:80]
        ]
        for line in errors[:30]:
            print("      " + line)
    print(f"{len(names) - failing} of {len(names)} program(s) print what 0.9.119 prints")
    return failing


USAGE = """usage: python -m tests.compat.harness record|compare [PROGRAM ...]
  record   re-record expected/ from the lovia 0.9.119 venv
  compare  run the programs on this checkout and show what differs from 0.9.119"""

if __name__ == "__main__":
    import tempfile

    if len(sys.argv) < 2 or sys.argv[1] not in ("record", "compare"):
        sys.exit(USAGE)
    wanted = [n.removesuffix(".py") for n in sys.argv[2:]] or programs()
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1] == "compare":
            sys.exit(1 if compare(wanted, Path(tmp)) else 0)
        ref = reference_python()
        if ref is None:
            sys.exit(
                "no reference venv: run scripts/reference-venv.sh (or set LOVIA_REFERENCE_PYTHON)"
            )
        bad = record(wanted, ref, Path(tmp))
    print(
        f"recorded {len(wanted) - len(bad)} program(s)"
        + (f"; broken on 0.9.119: {bad}" if bad else "")
    )
    sys.exit(1 if bad else 0)
