"""The conformance kit from a shell and as a pytest plugin (issue 35): stores that break a
promise each fail it, naming the promise; the backend docs/stores.md writes passes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def kit(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m lovia.testing.conformance ARGS`` from the project's root."""
    return subprocess.run(
        [sys.executable, "-m", "lovia.testing.conformance", *args, "-q", "-p", "no:randomly"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.parametrize(
    ("option", "store", "promise"),
    [
        (
            "--session",
            "tests.stores.kit_broken:twice",
            "broken promise: run_id idempotency: a re-submitted run was stored twice",
        ),
        (
            "--checkpointer",
            "tests.stores.kit_broken:reordering",
            "broken promise: append-only: entries were reordered",
        ),
        (
            "--session",
            "tests.stores.kit_broken:losing",
            "broken promise: concurrent appends: 1 of 2 concurrent appends were lost",
        ),
        (
            "--session",
            "tests.stores.kit_broken:file_losing",
            "appends from several processes were lost",
        ),
    ],
)
def test_a_broken_store_fails_the_kit_naming_the_promise(
    option: str, store: str, promise: str
) -> None:
    done = kit(option, store)
    assert done.returncode == 1, done.stdout + done.stderr
    assert promise in done.stdout, done.stdout


def test_the_kit_from_a_shell_passes_a_good_store_and_skips_with_reasons() -> None:
    """Either option alone tests that store alone; a capability the store lacks is a skip
    with its reason, not a failure."""
    done = kit("--session", "tests.stores.kit_factories:memory_session", "-rs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "TestCheckpointer" not in done.stdout
    assert "the store is not shared between processes" in done.stdout


def test_a_bad_factory_name_is_a_clear_error() -> None:
    done = kit("--session", "no_such_module_here:make")
    assert done.returncode == 2
    assert "cannot import 'no_such_module_here'" in done.stderr
    assert "hint:" in done.stderr


def test_the_backend_docs_stores_md_writes_passes_the_kit(tmp_path: Path) -> None:
    """The example backend of docs/stores.md, saved as the page says, passes every check it
    runs from a shell, and skips the capabilities it does not have, with reasons."""
    page = (ROOT / "docs" / "stores.md").read_text(encoding="utf-8")
    code = page.split("Save it as `mystore.py`:\n\n```python\n", 1)[1].split("\n```", 1)[0]
    (tmp_path / "mystore.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "lovia.testing.conformance"),
            *("--session", "mystore:make_session"),
            *("--checkpointer", "mystore:make_checkpointer"),
            "-rs",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " failed" not in done.stdout
    for skipped in ("trim_tool_results()", "rewind()", "history()", "acquire_lease"):
        assert f"does not offer {skipped}" in done.stdout.replace(", renew_lease", "")
    assert "test_concurrent_processes" not in done.stdout  # ran, and passed: not skipped


def test_the_plugin_runs_the_suites_with_factories_on_pytests_command_line(
    tmp_path: Path,
) -> None:
    """``pytest -p lovia.testing.conformance --lovia-session ... --pyargs ...``, as
    docs/stores.md shows it."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "lovia.testing.conformance"),
            "--lovia-session=tests.stores.kit_broken:twice",
            *("--pyargs", "lovia.testing.conformance._cli_suite", "-k", "idempotent"),
            *("--rootdir", str(tmp_path), "-p", "no:cacheprovider"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "run_id idempotency: a re-submitted run was stored twice" in done.stdout
