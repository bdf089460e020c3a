"""Every Python block in the README and docs runs as written, offline (issue 17).

Each runnable block is written to a file of its own and run in a fresh interpreter, with no
API key and no ``LOVIA_MODEL`` in its environment, in an empty working directory: exactly what
a reader gets who pastes it into ``example.py``. It runs in Python's development mode with
warnings as errors, so an example that leaks a store or triggers a warning fails too.
Blocks marked ``# needs: ...`` or ``# fragment`` are compiled only (see ``blocks.py``).
"""

from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

from .blocks import NEEDS, Block, all_blocks

BLOCKS = all_blocks()
HOW_TO_FIX = (
    "A block must run as written, offline, pasted into a file of its own: wrap awaits in a "
    "function run by asyncio.run, use lovia.testing.ScriptedProvider or lovia.demo for the "
    "model. Otherwise start it with '# fragment' (a piece of a program, compiled only) or "
    "'# needs: X' (X one of tests/docs/blocks.py NEEDS, compiled only)."
)
OFFLINE_ENV_DROP = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LOVIA_MODEL", "OPENAI_BASE_URL")


def _offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV_DROP}
    # the checkout's own package, whether installed or put on the path by the test run
    src = str(pathlib.Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def test_the_docs_have_python_blocks_and_most_of_them_run() -> None:
    assert len(BLOCKS) >= 20
    runnable = [b for b in BLOCKS if b.runs]
    assert len(runnable) * 2 > len(BLOCKS), [b.id for b in BLOCKS if not b.runs]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_block_compiles(block: Block) -> None:
    """A block parses; only a block marked as a fragment may use a top-level ``await``."""
    for need in block.needs:
        assert need in NEEDS, f"{block.id}: unknown '# needs: {need}' (known: {sorted(NEEDS)})"
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if block.fragment else 0
    try:
        compile(block.code, block.id, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        pytest.fail(f"{block.id}: {exc}\n{block.code}\n{HOW_TO_FIX}")


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.runs], ids=lambda b: b.id)
def test_block_runs_offline(block: Block, tmp_path: pathlib.Path) -> None:
    program = tmp_path / "example.py"
    program.write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", "-X", "dev", str(program)],
        cwd=tmp_path,
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (
        f"{block.id} failed:\n{block.code}\n--- stderr:\n{done.stderr}\n{HOW_TO_FIX}"
    )
    # warnings are errors (-W error); one raised where it cannot propagate is printed instead
    for sign in ("Exception ignored", "Warning:"):
        assert sign not in done.stderr, f"{block.id}:\n{done.stderr}"
    position = 0
    for expected in block.expected_output:
        found = done.stdout.find(expected, position)
        assert found >= 0, f"{block.id}: expected {expected!r} in the output:\n{done.stdout}"
        position = found + len(expected)


_STORE_FILE = re.compile(r"""["']([\w.-]+\.db)["']""")


def _store_files(block: Block) -> set[str]:
    """The database files a block opens in its working directory (``"chat.db"``)."""
    return set(_STORE_FILE.findall(block.code))


def test_pages_do_not_share_a_database_file() -> None:
    """A reader runs the tour and the pages in one folder, one after the other: a file that two
    pages' programs open (each with its own ids and counts) makes the second print other
    numbers than its comments say."""
    pages: dict[str, set[str]] = {}
    for block in BLOCKS:
        if block.runs:
            for name in _store_files(block):
                pages.setdefault(name, set()).add(
                    str(block.path.relative_to(block.path.parents[1]))
                )
    shared = {name: sorted(where) for name, where in pages.items() if len(where) > 1}
    assert not shared, f"one file per page, so the pages can be run in one folder: {shared}"


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.runs and _store_files(b)], ids=lambda b: b.id
)
def test_a_block_that_stores_runs_again_in_the_same_folder(
    block: Block, tmp_path: pathlib.Path
) -> None:
    """Running an example twice is what a reader does: the second run finds the first run's
    file and may print other numbers (the docs say so), but it must not fail."""
    program = tmp_path / "example.py"
    program.write_text(block.code, encoding="utf-8")
    for attempt in (1, 2):
        done = subprocess.run(
            [sys.executable, str(program)],
            cwd=tmp_path,
            env=_offline_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{block.id}, run {attempt}:\n{done.stderr}"
