"""`lovia runs resume` / `approve` / `reject` on a run parked for an approval, as a user
drives them from a shell: the run was parked by one process, each command is another."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shlex
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    tool,
)
from lovia.testing import ScriptedProvider, call

ROOT = Path(__file__).resolve().parents[2]

APP = '''
from pathlib import Path

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay."""
    with Path("paid.txt").open("a") as f:
        f.write(f"{amount}\\n")
    return f"paid {amount}"


# the model's answer once the parked call has its result
agent = Agent("payer", model=ScriptedProvider([text("Paid it.")]), tools=[pay])
# a model that asks to pay once more after the parked call ran
again = Agent(
    "payer",
    model=ScriptedProvider([call("pay", {"amount": 9}, call_id="p2"), text("Paid both.")]),
    tools=[pay],
)
'''


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay."""
    raise AssertionError("a parked call does not run in the process that parked it")


async def _park(db: Path) -> None:
    session, cp = SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)
    model = ScriptedProvider([call("pay", {"amount": 5}, call_id="p1")])
    agent = Agent("payer", model=model, tools=[pay], approval_handler=lambda c, ctx: "defer")
    with pytest.raises(ApprovalPending):
        await Runner.run(
            agent,
            "pay 5",
            session=session,
            session_id="s1",
            checkpoint=CheckpointOptions(cp, "job"),
        )
    await session.close()
    await cp.close()


@pytest.fixture
def parked(tmp_path: Path) -> Path:
    """A folder with app.py and lovia.db, whose run "job" waits for a decision on call p1."""
    (tmp_path / "app.py").write_text(APP)
    asyncio.run(_park(tmp_path / "lovia.db"))
    return tmp_path


def lovia(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(folder)])}
    env.pop("LOVIA_DB", None)
    code = "import sys; from lovia.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args, "--db", "lovia.db"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env=env,
    )


def digests(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.name.startswith("lovia.db") and not p.name.endswith("-shm")
    }


def dump(folder: Path) -> list[str]:
    """The database's contents, whatever its WAL holds (a refusal may fold the WAL in), but
    for run leases: a decision takes the run's lease, a refused one too."""
    with closing(sqlite3.connect(folder / "lovia.db")) as db:
        return [line for line in db.iterdump() if "lovia_run_leases" not in line]


def paid(folder: Path) -> list[str]:
    path = folder / "paid.txt"
    return path.read_text().split() if path.exists() else []


def test_resuming_before_the_decision_is_refused_and_denies_nothing(parked: Path) -> None:
    """A parked run resumed before anyone decided must not have its call denied by nobody:
    the command is refused, says how to decide, and leaves every file as it was."""
    before = digests(parked)
    done = lovia(parked, "runs", "resume", "job", "--app", "app:agent")
    assert done.returncode == 2, done.stderr
    assert "p1" in done.stderr and "lovia runs approve job" in done.stderr
    assert "lovia: hint:" in done.stderr
    assert digests(parked) == before and paid(parked) == []
    waiting = lovia(parked, "runs", "approvals", "--json")
    assert [(r["run_id"], r["call_id"]) for r in json.loads(waiting.stdout)] == [("job", "p1")]


def test_approve_then_resume_pays_once_and_a_second_resume_prints_the_stored_answer(
    parked: Path,
) -> None:
    approved = lovia(parked, "runs", "approve", "job", "p1")
    assert approved.returncode == 0 and "lovia runs resume job" in approved.stdout
    resumed = lovia(parked, "runs", "resume", "job", "--app", "app:agent")
    assert resumed.returncode == 0, resumed.stderr
    assert "Paid it." in resumed.stdout and paid(parked) == ["5"]
    # the run is completed: resuming again replays it (no tool, no model) and still prints it
    again = lovia(parked, "runs", "resume", "job", "--app", "app:agent")
    assert again.returncode == 0, again.stderr
    assert "Paid it." in again.stdout and paid(parked) == ["5"]
    shown = json.loads(lovia(parked, "sessions", "show", "s1", "--json").stdout)
    assert [e["type"] for e in shown] == ["input", "tool_call", "tool_result", "assistant_text"]


def test_a_call_that_needs_approval_during_the_resume_parks_the_run_again(parked: Path) -> None:
    assert lovia(parked, "runs", "approve", "job", "p1").returncode == 0
    resumed = lovia(parked, "runs", "resume", "job", "--app", "app:again")
    assert resumed.returncode == 2
    assert paid(parked) == ["5"]  # p1 ran; p2 waits, it was not denied
    assert "lovia runs approvals job" in resumed.stderr
    waiting = json.loads(lovia(parked, "runs", "approvals", "job", "--json").stdout)
    assert [r["call_id"] for r in waiting] == ["p2"]
    assert "awaiting approval" in lovia(parked, "runs", "list").stdout


def test_a_conflicting_decision_is_status_1_with_the_usual_error_and_hint_lines(
    parked: Path,
) -> None:
    assert lovia(parked, "runs", "reject", "job", "p1").returncode == 0
    before = dump(parked)
    conflict = lovia(parked, "runs", "approve", "job", "p1")
    assert conflict.returncode == 1
    assert conflict.stderr.splitlines() == [
        "lovia: error: call 'p1' of run 'job' was already decided (rejected)",
        "lovia: hint: a decision is final",
    ]
    assert lovia(parked, "runs", "reject", "job", "p1").returncode == 0  # the same way: fine
    unknown = lovia(parked, "runs", "approve", "job", "p9")
    assert unknown.returncode == 2
    assert "lovia: hint: see 'lovia runs approvals job'" in unknown.stderr
    assert dump(parked) == before


def test_a_resume_that_fails_prints_its_error_once(parked: Path) -> None:
    """An agent the run cannot be resumed with: one error line and one hint, on stderr."""
    assert lovia(parked, "runs", "approve", "job", "p1").returncode == 0
    failed = lovia(parked, "runs", "resume", "job", "--demo")
    assert failed.returncode == 2
    assert "not reachable" not in failed.stdout
    assert failed.stderr.count("not reachable") == 1 and "lovia: hint:" in failed.stderr


def printed_command(stdout: str) -> list[str]:
    """The ``lovia runs resume ...`` command a decision printed, as words."""
    line = next(line for line in stdout.splitlines() if "go on with: " in line)
    command = line.split("go on with: ", 1)[1].split(" (", 1)[0]
    return shlex.split(command)


def test_the_resume_command_a_decision_prints_runs_as_printed(parked: Path) -> None:
    """Issue 36: `runs approve` printed `lovia runs resume job`, which fails without the --app
    and --db it needs; the printed command carries the ones the decision was given."""
    approved = lovia(parked, "runs", "approve", "job", "p1", "--app", "app:agent")
    assert approved.returncode == 0, approved.stderr
    words = printed_command(approved.stdout)
    assert words == ["lovia", "runs", "resume", "job", "--db", "lovia.db", "--app", "app:agent"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(parked)])}
    env.pop("LOVIA_DB", None)
    resumed = subprocess.run(
        [sys.executable, "-m", *words],  # `lovia` is `python -m lovia`
        capture_output=True,
        text=True,
        timeout=120,
        cwd=parked,
        env=env,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Paid it." in resumed.stdout and paid(parked) == ["5"]


def test_a_decision_without_an_agent_names_the_app_to_give_the_resume(parked: Path) -> None:
    rejected = lovia(parked, "runs", "reject", "job", "p1")
    assert rejected.returncode == 0, rejected.stderr
    assert printed_command(rejected.stdout)[-2:] == ["--app", "MODULE:ATTR"]
    assert "where agent 'payer' is defined" in rejected.stdout
    demo = lovia(parked, "runs", "reject", "job", "p1", "--demo")
    assert printed_command(demo.stdout)[-1] == "--demo"
