"""What a run did is easy to see (issue 36): ``LOVIA_LOG`` turns lovia's narrative on without
code, ``lovia runs show`` draws a run's timeline (turns, tool calls and how long each took,
tokens), and ``--follow`` follows a live run until it ends. Everything through real
processes: the program that runs the agent, and the ``lovia`` command beside it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

JOB = '''
import asyncio, os, sys
from pathlib import Path

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, tool
from lovia.testing import ScriptedProvider, batch, call, text


@tool
async def slow(n: int) -> str:
    """Wait n tenths of a second."""
    await asyncio.sleep(n / 10)
    return f"waited {n}"


@tool
async def gate() -> str:
    """Wait until the file 'go' exists (the test opens it)."""
    Path("at-gate").touch()
    while not Path("go").exists():
        await asyncio.sleep(0.05)
    return "through"


model = ScriptedProvider(
    [batch(("slow", {"n": 3}), ("slow", {"n": 1})), call("gate", {}), text("done")]
)
agent = Agent("worker", model=model, tools=[slow, gate])


async def main() -> None:
    async with SQLiteCheckpointer("jobs.db", wal=True) as cp:
        result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "job-1"))
    print(result.output)


asyncio.run(main())
'''


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOVIA_", "OPENAI_"))}
    env.update(extra)
    return env


def job(folder: Path, **env: str) -> subprocess.Popen[str]:
    (folder / "job.py").write_text(JOB)
    return subprocess.Popen(
        [sys.executable, "job.py"],
        cwd=folder,
        env=environment(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished_job(folder: Path, **env: str) -> tuple[str, str]:
    (folder / "go").touch()  # the gate is open from the start
    proc = job(folder, **env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out == "done\n"
    return out, err


def lovia(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lovia", *args],
        cwd=folder,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_script_logs_nothing_unless_lovia_log_asks(tmp_path: Path) -> None:
    _, err = finished_job(tmp_path)
    assert err == ""


def test_lovia_log_turns_the_narrative_on_without_code(tmp_path: Path) -> None:
    _, err = finished_job(tmp_path, LOVIA_LOG="info")
    lines = err.splitlines()
    assert any("lovia.runtime.loop: run.start: agent='worker'" in line for line in lines), err
    assert sum("tool.done: slow" in line for line in lines) == 2, err
    assert any("run.done: agent='worker' turns=3" in line for line in lines), err
    assert not any("DEBUG" in line for line in lines)


def test_lovia_log_file_sends_it_to_a_file_and_debug_says_more(tmp_path: Path) -> None:
    _, err = finished_job(tmp_path, LOVIA_LOG="debug", LOVIA_LOG_FILE="run.log")
    assert err == ""
    log = (tmp_path / "run.log").read_text()
    assert "run.start" in log and "tool.done: gate" in log and "DEBUG" in log
    assert "\033[" not in log  # no colours in a file


def test_a_bad_lovia_log_value_is_a_warning_naming_the_good_ones(tmp_path: Path) -> None:
    _, err = finished_job(tmp_path, LOVIA_LOG="loud")
    assert "UserWarning: LOVIA_LOG='loud' is not a logging level" in err
    assert "LOVIA_LOG=info" in err and "run.start" not in err


def _durations(text: str) -> dict[str, float]:
    """``{call_id: seconds}`` of the tool lines of a drawn timeline."""
    found = re.findall(r"tool \w+ \[(\w+)\]: (\d+\.\d+)s, ok", text)
    return {call_id: float(seconds) for call_id, seconds in found}


def test_runs_show_draws_the_timeline_with_durations_and_tokens(tmp_path: Path) -> None:
    finished_job(tmp_path)
    shown = lovia(tmp_path, "runs", "show", "job-1", "--db", "jobs.db")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "run job-1: completed, agent worker, 3 turns"
    assert "tokens: 6 (in 3, out 3)" in lines  # the scripted model: 1 in, 1 out a turn
    start = lines.index(next(line for line in lines if line.startswith("timeline (from ")))
    drawn = lines[start + 1 : lines.index("entries:")]
    kinds = [re.sub(r"^\s+\+\S+\s+", "", line).split(" [")[0].split(":")[0] for line in drawn]
    assert kinds == [
        "turn 1 (worker)",
        "tool slow",
        "tool slow",
        "turn 2 (worker)",
        "tool gate",
        "turn 3 (worker)",
    ], drawn
    assert all("tokens in 1 out 1" in line for line in drawn if "turn " in line)
    took = _durations(shown.stdout)
    # each call took at least as long as it slept (tenths of a second)
    assert took["call_0_slow"] >= 0.3 and took["call_1_slow"] >= 0.1, took
    as_json = json.loads(
        lovia(tmp_path, "runs", "show", "job-1", "--db", "jobs.db", "--json").stdout
    )
    assert [r[1] for r in as_json["timeline"]["calls"]] == ["slow", "slow", "gate"]
    assert as_json["usage"]["input_tokens"] == 3


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    for _ in range(1200):
        if path.exists():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"{path.name} never appeared")


def test_follow_draws_a_live_run_until_it_ends(tmp_path: Path) -> None:
    running = job(tmp_path)
    try:
        wait_for(tmp_path / "at-gate", running)  # the run waits in its gate tool
        follower = subprocess.Popen(
            [sys.executable, "-m", "lovia", "runs", "show", "job-1", "--db", "jobs.db", "--follow"],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert follower.stdout is not None
        seen: list[str] = []
        while not seen or "tool gate" not in seen[-1]:  # the call in flight is drawn
            line = follower.stdout.readline()
            assert line, (seen, follower.communicate())
            seen.append(line.rstrip("\n"))
        assert seen[0] == "run job-1: running, agent worker, 2 turns"
        assert seen[-1].endswith("tool gate [call_gate]: no result yet (running, or cut off)")
        (tmp_path / "go").touch()  # the run goes on and ends; the follower with it
        rest, err = follower.communicate(timeout=120)
        assert follower.returncode == 0, err
        tail = rest.splitlines()
        assert re.search(r"tool gate \[call_gate\]: \d+\.\d+s, ok$", "\n".join(tail), re.M)
        assert any("turn 3 (worker): model " in line for line in tail)
        assert tail[-3:] == [
            "run job-1: completed, agent worker, 3 turns",
            "tokens: 6 (in 3, out 3)",
            "answer: done",
        ]
    finally:
        (tmp_path / "go").touch()
        running.communicate(timeout=120)
    assert running.returncode == 0
