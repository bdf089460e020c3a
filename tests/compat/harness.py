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
        env["PYTHONPATH"] = str(ROOT / "src")
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


if __name__ == "__main__":
    import tempfile

    ref = reference_python()
    if ref is None:
        sys.exit("no reference venv: run scripts/reference-venv.sh (or set LOVIA_REFERENCE_PYTHON)")
    wanted = sys.argv[1:] or programs()
    with tempfile.TemporaryDirectory() as tmp:
        bad = record(wanted, ref, Path(tmp))
    print(
        f"recorded {len(wanted) - len(bad)} program(s)"
        + (f"; broken on 0.9.119: {bad}" if bad else "")
    )
    sys.exit(1 if bad else 0)
