"""examples/05_resume.py runs as a user runs it: the worker crashes once, the job finishes."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "05_resume.py"


def test_example_05_crashes_once_and_finishes_on_resubmission(tmp_path: pathlib.Path) -> None:
    """C6/E2: the re-submitted job resumes; the invoice in flight is not sent twice."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "worker killed while sending INV-2" in out
    assert "worker exited with -9; re-submitting" in out
    assert "attempt 3" not in out
    assert "All 3 invoices are out." in out
    # the second attempt sent only INV-3: INV-1 had its result, INV-2 deduplicated
    second = out.split("attempt 2:")[1]
    assert "sent INV-1" not in second and "sent INV-2" not in second and "sent INV-3" in second
    assert "model calls=2" in second  # INV-2 re-ran without the model; then INV-3 and the answer
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    assert sorted(ledger) == [f"invoice-batch-2026-12:INV-{i}" for i in (1, 2, 3)]
