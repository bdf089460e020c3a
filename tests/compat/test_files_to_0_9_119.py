"""A file this lovia wrote, opened by lovia 0.9.119, is refused in 0.9.119's own words.

0.9.119 keeps its schema versions in ``lovia_schema`` and refuses a store recorded at a version
past its own ("a newer lovia wrote this database"). A new file here records its stores there
past any version 0.9.119 knows, so a 0.9.119 process pointed at it (a rolled-back install, a
second program on the same ``./.lovia/<agent>.db``) stops with that hint instead of making
empty tables of its own beside ours and writing the conversation where this lovia never reads
it, or failing half way through its chat tables' migrations with a bare SQLite error. The file
is left as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .harness import ROOT, reference_python

WRITE = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import Agent, CheckpointOptions, Runner
    from lovia.stores import SQLiteCheckpointer, SQLiteSession
    from lovia.testing import ScriptedProvider, text
    from lovia.web import ChatStore

    async def main() -> None:
        store = sys.argv[1]
        if store == "chat":
            await ChatStore.sqlite("web.db").list()
            return
        session = SQLiteSession("s.db") if store == "session" else None
        checkpoint = (
            CheckpointOptions(SQLiteCheckpointer("c.db"), run_id="r1")
            if store == "checkpoint"
            else None
        )
        agent = Agent(name="a", model=ScriptedProvider([text("kept")]))
        result = await Runner.run(
            agent, "hello", session=session, session_id="s1", checkpoint=checkpoint
        )
        print(result.output)

    asyncio.run(main())
    """
)

OPEN_WITH_0_9_119 = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import Agent, CheckpointOptions, Runner
    from lovia.stores import SQLiteCheckpointer, SQLiteSession
    from lovia.testing import ScriptedProvider

    async def main() -> None:
        store = sys.argv[1]
        if store == "chat":
            # its chat tables without its web server (this venv has no FastAPI): the package's
            # modules load without running lovia.web's __init__
            import os, types, lovia
            web = types.ModuleType("lovia.web")
            web.__path__ = [os.path.join(os.path.dirname(lovia.__file__), "web")]
            sys.modules["lovia.web"] = web
            from lovia.web.store import ChatStore
            await ChatStore.sqlite("web.db").list()
            return
        session = SQLiteSession("s.db") if store == "session" else None
        checkpoint = (
            CheckpointOptions(SQLiteCheckpointer("c.db"), run_id="r2")
            if store == "checkpoint"
            else None
        )
        agent = Agent(name="a", model=ScriptedProvider(["new"]))
        await Runner.run(agent, "again", session=session, session_id="s1", checkpoint=checkpoint)

    asyncio.run(main())
    """
)

FILES = {"session": "s.db", "checkpoint": "c.db", "chat": "web.db"}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("store", sorted(FILES))
def test_a_file_written_here_is_refused_by_0_9_119_and_left_as_it_was(
    tmp_path: Path, store: str
) -> None:
    ref = reference_python()
    if ref is None:
        pytest.skip("no lovia 0.9.119 venv: run scripts/reference-venv.sh")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")}
    wrote = subprocess.run(
        [sys.executable, "-c", WRITE, store],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrote.returncode == 0, wrote.stderr
    path = tmp_path / FILES[store]
    before = _digest(path)

    opened = subprocess.run(
        [str(ref), "-c", OPEN_WITH_0_9_119, store],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert opened.returncode != 0, opened.stdout
    assert "newer than this lovia knows" in opened.stderr, opened.stderr
    assert "upgrade lovia" in opened.stderr
    assert _digest(path) == before
