"""A model turn with two calls sharing one call id, the run stopped between their results.

The run gives the later call an id of its own (``<id>_2``) before the turn is saved, so the
result saved before the stop answers its own call: the resume runs the other call once, never
the finished one again, and the model is sent each result with its own call.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    RunCancelled,
    Runner,
    ToolCallEntry,
    ToolResultEntry,
    entry_from_dict,
    tool,
)
from lovia.messages import AssistantTurn, ToolCall
from lovia.testing import ScriptedProvider, batch, text

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from .dupcall_child import RUN_ID, SignallingCheckpointer, model
from .dupcall_child import TURN as CHILD_TURN
from .stores import assert_well_formed

CHILD = Path(__file__).with_name("dupcall_child.py")
ROOT = Path(__file__).resolve().parents[2]
KINDS = {"tools": ("alpha", "beta"), "same": ("act", "act")}


async def _child(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        *args,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


def _check(kind: str, output: str, entries: list[Any], effects: list[str]) -> None:
    """Each call took effect once, its result is its own, and the model saw them paired."""
    a, b = KINDS[kind]
    assert sorted(effects) == sorted([f"{a}:a", f"{b}:b"])
    calls = [e for e in entries if isinstance(e, ToolCallEntry)]
    assert [(c.call_id, c.name) for c in calls] == [("dup", a), ("dup_2", b)]
    answers = {e.call_id: e.output for e in entries if isinstance(e, ToolResultEntry)}
    assert answers == {"dup": f"{a} did a", "dup_2": f"{b} did b"}
    assert_well_formed(entries)
    seen = json.loads(output)  # what the model was sent: each call with its tool messages
    assert seen == [["dup", a, "a", [f"{a} did a"]], ["dup_2", b, "b", [f"{b} did b"]]]


async def _killed_and_resumed(db: str, tmp_path: Path, kind: str, first: str, *extra: str) -> None:
    effects = tmp_path / "effects.log"
    code, _ = await _child(db, str(effects), kind, first, "crash", *extra)
    assert code == -signal.SIGKILL
    a, b = KINDS[kind]
    done_before = effects.read_text().split()
    assert done_before == ([f"{a}:a"] if first == "a" else [f"{b}:b"])  # one took effect
    code, out = await _child(db, str(effects), kind, first, "resume", *extra)
    assert code == 0, out
    got = json.loads(out)
    entries = [entry_from_dict(e) for e in got["entries"]]
    _check(kind, got["output"], entries, effects.read_text().split())


@pytest.mark.parametrize("first", ["a", "b"])
@pytest.mark.parametrize("kind", ["tools", "same"])
async def test_sqlite_a_kill_between_twin_results_resumes_each_call_once(
    tmp_path: Path, kind: str, first: str
) -> None:
    """SIGKILL after the result of ``first`` is checkpointed, the other call not yet done."""
    await _killed_and_resumed(str(tmp_path / "runs.db"), tmp_path, kind, first)


@pytest.mark.parametrize("first", ["a", "b"])
@pytest.mark.parametrize("kind", ["tools", "same"])
async def test_postgres_a_kill_between_twin_results_resumes_each_call_once(
    tmp_path: Path, kind: str, first: str
) -> None:
    dsn, prefix = postgres_dsn(), fresh_prefix()
    try:
        await _killed_and_resumed(dsn, tmp_path, kind, first, prefix)
    finally:
        drop_prefix(dsn, prefix)


@pytest.mark.parametrize("first", ["a", "b"])
@pytest.mark.parametrize("kind", ["tools", "same"])
async def test_in_memory_a_stop_between_twin_results_resumes_each_call_once(
    kind: str, first: str
) -> None:
    """The same in one process: the waiting call stops the run (``RunCancelled``) instead."""
    effects: list[str] = []
    cp = SignallingCheckpointer(InMemoryCheckpointer())
    stop = [True]

    async def act_as(name: str, label: str) -> str:
        if stop[0] and label != first:
            await cp.result_saved.wait()
            raise RunCancelled("the worker died")  # before taking effect; no result
        effects.append(f"{name}:{label}")
        return f"{name} did {label}"

    @tool
    async def alpha(label: str) -> str:
        """Alpha."""
        return await act_as("alpha", label)

    @tool
    async def beta(label: str) -> str:
        """Beta."""
        return await act_as("beta", label)

    @tool
    async def act(label: str) -> str:
        """Act."""
        return await act_as("act", label)

    CHILD_TURN[:] = [
        ToolCall(id="dup", name=name, arguments=json.dumps({"label": label}))
        for name, label in zip(KINDS[kind], "ab", strict=True)
    ]
    agent = Agent("worker", model=ScriptedProvider([model] * 3), tools=[alpha, beta, act])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "do both", checkpoint=CheckpointOptions(cp, RUN_ID))
    assert len(effects) == 1
    stop[0] = False
    result = await Runner.run(agent, "do both", checkpoint=CheckpointOptions(cp, RUN_ID))
    snap = await cp.load(RUN_ID)
    assert snap is not None
    _check(kind, result.output, list(snap.entries), effects)


async def test_every_repeat_gets_an_id_no_call_of_the_turn_has() -> None:
    """Three calls share ``c1`` and a fourth is already ``c1_2``: ids stay unique, in order,
    and the first call of an id keeps it."""
    ran: list[int] = []

    @tool
    async def step(n: int) -> str:  # async: the four finish in call order, as compared below
        """Step n."""
        ran.append(n)
        return f"step {n}"

    turn = batch(("step", {"n": 1}, "c1"), ("step", {"n": 2}, "c1"), ("step", {"n": 3}, "c1_2"))
    turn.tool_calls.append(ToolCall(id="c1", name="step", arguments='{"n": 4}'))
    model_ = ScriptedProvider([turn, text("done")])
    result = await Runner.run(Agent("a", model=model_, tools=[step]), "go")
    calls = [(e.call_id, e.arguments) for e in result.entries if isinstance(e, ToolCallEntry)]
    assert calls == [
        ("c1", '{"n": 1}'),
        ("c1_3", '{"n": 2}'),
        ("c1_2", '{"n": 3}'),
        ("c1_4", '{"n": 4}'),
    ]
    answers = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    assert answers == {"c1": "step 1", "c1_3": "step 2", "c1_2": "step 3", "c1_4": "step 4"}
    assert sorted(ran) == [1, 2, 3, 4]
    sent = model_.calls[1]  # the provider is sent each call once, with its own result
    (assistant,) = [m for m in sent if m.tool_calls]
    assert [c.id for c in assistant.tool_calls] == ["c1", "c1_3", "c1_2", "c1_4"]
    assert [m.tool_call_id for m in sent if m.role == "tool"] == ["c1", "c1_3", "c1_2", "c1_4"]


async def test_a_turn_without_repeats_keeps_the_models_ids() -> None:
    turn = AssistantTurn(
        content=None,
        tool_calls=[
            ToolCall(id="x", name="echo", arguments='{"s": "1"}'),
            ToolCall(id="y", name="echo", arguments='{"s": "2"}'),
        ],
    )

    @tool
    def echo(s: str) -> str:
        """Echo."""
        return s

    result = await Runner.run(
        Agent("a", model=ScriptedProvider([turn, text("ok")]), tools=[echo]), "go"
    )
    assert [e.call_id for e in result.entries if isinstance(e, ToolCallEntry)] == ["x", "y"]
