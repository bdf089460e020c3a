"""``ctx.idempotency_key``: one key per call, kept across a SIGKILL and resume (issue 32)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import Agent, RunContext, Runner, UserError, tool
from lovia.testing import ScriptedProvider, batch, call, text

CHILD = Path(__file__).with_name("child.py")
ROOT = CHILD.parents[2]


def attempt(tmp: Path, scenario: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, str(CHILD), str(tmp / "run.db"), str(tmp / "log.jsonl"), scenario, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def log_lines(tmp: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (tmp / "log.jsonl").read_text().splitlines()]


def test_a_call_keeps_its_key_across_sigkill_and_resume(tmp_path: Path) -> None:
    first = attempt(tmp_path, "keys", "--kill", "key2")
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = attempt(tmp_path, "keys")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["output"] == "done"
    keys = [(r["turn"], r["key"]) for r in log_lines(tmp_path)]
    # turn 1 ran once (its results were saved); the turn-2 call ran, was killed, ran again
    assert [t for t, _ in keys] == [1, 1, 2, 2]
    (_, a), (_, b), (_, c), (_, c_again) = keys
    assert c_again == c  # the same call, another process: the same key
    assert len({a, b, c}) == 3  # one id, the same arguments: three calls, three keys
    assert all(len(k) == 32 and int(k, 16) >= 0 for k in (a, b, c))


async def test_keys_depend_on_the_run_and_the_place_only() -> None:
    seen: list[str] = []

    @tool
    async def record(ctx: RunContext[None], tag: str) -> str:
        seen.append(ctx.idempotency_key)
        return "ok"

    def script() -> ScriptedProvider:
        return ScriptedProvider(
            [batch(("record", {"tag": "x"}, "c1"), ("record", {"tag": "y"}, "c2")), text("ok")]
        )

    from lovia import CheckpointOptions, InMemoryCheckpointer

    for run_id in ("run-a", "run-a", "run-b"):
        cp = InMemoryCheckpointer()  # a new store: run-a runs afresh the second time
        agent = Agent("a", model=script(), tools=[record])
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, run_id))
    assert seen[0:2] == seen[2:4]  # the same run id and places: the same keys
    assert len(set(seen[0:2] + seen[4:6])) == 4  # another run: other keys


def test_the_key_is_refused_outside_a_tool_call() -> None:
    ctx: RunContext[None] = RunContext()
    with pytest.raises(UserError) as caught:
        _ = ctx.idempotency_key
    assert caught.value.hint


async def test_a_hook_reading_the_key_of_a_nested_context_is_refused() -> None:
    """A tool's key belongs to its own run's context, not to a context made inside it."""
    answers: list[str] = []

    @tool
    async def inner(ctx: RunContext[None]) -> str:
        other: RunContext[None] = RunContext()
        try:
            _ = other.idempotency_key
        except UserError:
            answers.append("refused")
        answers.append(ctx.idempotency_key)
        return "ok"

    agent = Agent("a", model=ScriptedProvider([call("inner"), text("ok")]), tools=[inner])
    await Runner.run(agent, "go")
    assert answers[0] == "refused" and len(answers[1]) == 32
