"""`--app MODULE:ATTR` pointing at a module that fails: one error line naming what failed and
one hint, exit status 2, no traceback, nothing created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MODULES = {
    "boom": 'raise RuntimeError("the config file is missing")\n',
    "needsdep": "import no_such_dependency_for_lovia_tests\n",
    "plain": "answer = 42\n",
}


@pytest.mark.parametrize(
    ("app", "error", "hint"),
    [
        ("boom:agent", "raised RuntimeError: the config file is missing", "import boom"),
        ("needsdep:agent", "no_such_dependency_for_lovia_tests", "install"),
        ("missing_module:agent", "cannot import 'missing_module'", "PYTHONPATH"),
        ("plain:agent", "has no attribute 'agent'", "--app plain:"),
    ],
)
def test_a_failing_app_module_is_one_error_and_one_hint(
    tmp_path: Path, app: str, error: str, hint: str
) -> None:
    for name, source in MODULES.items():
        (tmp_path / f"{name}.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    code = "import sys; from lovia.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "web", "--app", app, "--port", "0", "--db", "chats.db"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("lovia: error: ") and error in lines[0]
    assert lines[1].startswith("lovia: hint: ") and hint in lines[1]
    assert not (tmp_path / "chats.db").exists()
