"""examples/06_approvals.py: park in one process, approve in a second, resume in a third;
the approved payment is made once, and a replay makes none (issue 15)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "06_approvals.py"

# Until the durable approvals of issue 15 are merged, lovia has no lovia.approvals module.


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=120
    )


def test_a_parked_payment_is_approved_elsewhere_and_made_once(tmp_path: pathlib.Path) -> None:
    done = _run(str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "parked pay-acme-2026-12: waiting for ['send_payment']" in out
    assert 'approving send_payment {"to": "ACME", "cents": 125000}' in out
    assert "result: Done: ACME's December invoice is paid." in out
    assert "payments made: 1" in out
    assert out.index("[ask]") < out.index("[approve]") < out.index("[resume]")

    again = _run("--step", "resume", str(tmp_path))  # the completed run replays
    assert again.returncode == 0, again.stderr
    assert "result: Done: ACME's December invoice is paid." in again.stdout
    assert json.loads((tmp_path / "payments.json").read_text()) == [{"to": "ACME", "cents": 125000}]


def test_nothing_is_paid_before_someone_approves(tmp_path: pathlib.Path) -> None:
    asked = _run("--step", "ask", str(tmp_path))
    assert asked.returncode == 0, asked.stderr
    assert "waiting for ['send_payment']" in asked.stdout
    resumed = _run("--step", "resume", str(tmp_path))  # nobody decided: it parks again
    assert resumed.returncode == 0, resumed.stderr
    assert "waiting for ['send_payment']" in resumed.stdout
    assert not (tmp_path / "payments.json").exists()
