"""0.9.119's core, workspace and built-in tool example programs run unchanged against a local
OpenAI-compatible server (scripts/run_examples.py), when 0.9.119's examples folder is at hand:
``LOVIA_REFERENCE_EXAMPLES``, or ``.cache/lovia-0.9.119/examples`` as
``scripts/run_examples.py --download`` leaves it (issue 29)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(
    os.environ.get("LOVIA_REFERENCE_EXAMPLES") or ROOT / ".cache" / "lovia-0.9.119" / "examples"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (FOLDER / "19_workspace.py").is_file(),
        reason="no 0.9.119 examples folder (scripts/run_examples.py --download fetches it)",
    ),
]


CORE = ["01", "02", "04", "05", "07", "08", "11", "12", "13", "14", "15", "18"]


@pytest.mark.parametrize(
    "name", [*CORE, "19", "20", "29", "tools/01", "tools/02", "tools/03", "tools/04"]
)
def test_the_example_runs_unchanged(name: str) -> None:
    pytest.importorskip("dotenv")
    pytest.importorskip("rich")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_examples.py"), str(FOLDER), name],
        capture_output=True,
        text=True,
        timeout=600,
    )
    outcome = json.loads(done.stdout)[name]
    assert outcome["ok"], outcome
    assert done.returncode == 0


@pytest.mark.parametrize(
    "name",
    [
        "21_todos.py",
        "22_skills.py",
        "23_memory.py",
        "25_custom_plugin.py",
        "28_eval.py",
        "30_subagents.py",
        "30_support_bot.py",
    ],
)
def test_the_toolkit_example_runs_unchanged(name: str) -> None:
    """0.9.119's todo, skill, memory, plugin, eval and subagent examples against a local server
    that plays the model by rules (scripts/run-toolkit-examples.py)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run-toolkit-examples.py"), str(FOLDER), name],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.stdout.startswith(f"ok   {name}:"), done.stdout + done.stderr
    assert done.returncode == 0
