"""Issue 33 through the real ``lovia`` entry point: ``sessions fork`` and ``runs fork``, then
the printed ``lovia runs resume`` goes on from the fork point in a subprocess."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    tool,
)
from lovia.testing import ScriptedProvider, call, text

LOVIA = str(Path(sys.executable).with_name("lovia"))

APP = '''
import pathlib
from lovia import Agent, tool
from lovia.testing import ScriptedProvider, text

LOG = pathlib.Path(__file__).with_name("log.txt")


def note(what):
    with LOG.open("a") as f:
        f.write(what + "\\n")


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    note(f"tool {a}+{b}")
    return a + b


def answer(messages):
    note(f"model saw {messages[-1].content}")
    return text("forked answer")


agent = Agent(name="calc", model=ScriptedProvider([answer]), tools=[add])
'''


def lovia(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("LOVIA_MODEL", None)
    return subprocess.run(
        [LOVIA, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env
    )


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def _fill(db: Path) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    session, cp = SQLiteSession(db), SQLiteCheckpointer(db)
    try:
        hello = Agent(name="calc", model=ScriptedProvider([text("hi")]), tools=[add])
        await Runner.run(
            hello, "hello", session=session, session_id="s1", checkpoint=CheckpointOptions(cp, "r0")
        )
        model = ScriptedProvider(
            [call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4}), text("done")]
        )
        agent = Agent(name="calc", model=model, tools=[add])
        await Runner.run(
            agent, "go", session=session, session_id="s1", checkpoint=CheckpointOptions(cp, "r1")
        )
    finally:
        await session.close()
        await cp.close()


async def test_runs_fork_prints_a_resume_that_goes_on_from_the_edited_step(tmp_path: Path) -> None:
    db = tmp_path / "lovia.db"
    await _fill(db)
    (tmp_path / "forkapp.py").write_text(APP, encoding="utf-8")
    source = as_json(lovia(tmp_path, "sessions", "show", "s1", "--db", str(db), "--json"))

    forked = as_json(
        lovia(
            tmp_path,
            "runs", "fork", "r1", "--at-turn", "2", "--run-id", "f1",
            "--tool-result", "call_add=70", "--db", str(db), "--app", "forkapp:agent", "--json",
        )
    )  # fmt: skip
    assert forked["session_id"] == "f1" and forked["forked_from"] == "r1"
    words = shlex.split(forked["resume"])
    assert words[:4] == ["lovia", "runs", "resume", "f1"]

    resumed = lovia(tmp_path, *words[1:])
    assert resumed.returncode == 0, resumed.stderr
    # one model call, seeing the edited result; no tool ran again
    assert (tmp_path / "log.txt").read_text().splitlines() == ["model saw 70"]

    run = as_json(lovia(tmp_path, "runs", "show", "f1", "--db", str(db), "--json"))
    assert run["status"] == "completed" and run["turns"] == 3
    fork_history = as_json(lovia(tmp_path, "sessions", "show", "f1", "--db", str(db), "--json"))
    assert [e.get("content") for e in fork_history][:2] == ["hello", "hi"]  # r0 came along
    assert fork_history[-1]["content"] == "forked answer"
    assert len(fork_history) == 2 + 6  # r0, then f1 without r1's own answer
    # the source session and run are untouched
    assert as_json(lovia(tmp_path, "sessions", "show", "s1", "--db", str(db), "--json")) == source
    listed = as_json(lovia(tmp_path, "sessions", "list", "--db", str(db), "--json"))
    origins = {r["session_id"]: r["forked_from"] for r in listed}
    assert origins == {"s1": None, "f1": {"session_id": "s1", "keep_entries": 2}}


async def test_sessions_fork_copies_up_to_a_run_and_lists_its_origin(tmp_path: Path) -> None:
    db = tmp_path / "lovia.db"
    await _fill(db)
    done = lovia(tmp_path, "sessions", "fork", "s1", "s2", "--upto-run", "r0", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "forked session 's1' into 's2' (1 run, 2 entries)" in done.stdout
    shown = as_json(lovia(tmp_path, "sessions", "show", "s2", "--db", str(db), "--json"))
    assert [e["content"] for e in shown] == ["hello", "hi"]
    listed = lovia(tmp_path, "sessions", "list", "--db", str(db))
    assert "(fork of s1)" in listed.stdout

    again = lovia(tmp_path, "sessions", "fork", "s1", "s2", "--db", str(db))
    assert again.returncode != 0 and "exists already" in again.stderr
    shown_again = as_json(lovia(tmp_path, "sessions", "show", "s2", "--db", str(db), "--json"))
    assert shown_again == shown
