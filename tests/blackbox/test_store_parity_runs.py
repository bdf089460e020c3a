"""The same runs on every built-in store leave the same record: what a SQLite file (either
journal mode) or PostgreSQL gives back equals what the in-memory store holds, field by field,
for a run that uses most of what a transcript can carry, and after every re-submission mode."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    Runner,
    UserError,
    tool,
)
from lovia.parts import ImagePart, TextPart
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import InputEntry

TEXTS = [
    "plain",
    "ü ß 漢字 😀",
    "quote ' \" \\ back",
    "a\x00nul",
    "\u2028line\u2029sep",
    "x" * 70_000,
]


@tool(parallel=False)  # results in the order asked: comparable run to run
def echo(s: str) -> str:
    """Give the text back."""
    return s


@tool(parallel=False)
def broken(n: int) -> str:
    """Always fails."""
    raise ValueError(f"broken {n}")


def _agents() -> Agent:
    helper = Agent(
        "helper",
        instructions="help",
        model=ScriptedProvider(
            [
                batch(*[("echo", {"s": t}, f"e{i}") for i, t in enumerate(TEXTS)]),
                text("helped", reasoning="mull it over"),
            ]
        ),
        tools=[echo],
    )
    return Agent(
        "front",
        instructions=lambda ctx: f"front desk for {ctx.session_id}",
        model=ScriptedProvider(
            [
                batch(("broken", {"n": 1}, "b1"), ("echo", {"s": "a\x00b"}, "e-nul")),
                call("echo", {"wrong": 1}, call_id="bad-args"),
                call("transfer_to_helper", {}, call_id="h1"),
            ]
        ),
        tools=[echo, broken],
        handoffs=[helper],
    )


def _input() -> list[Any]:
    return [
        InputEntry(role="system", content="extra system note"),
        InputEntry(
            role="user",
            content=[
                TextPart(text="look at this"),
                ImagePart(data="aGVsbG8=", mime_type="image/png", detail="low"),
            ],
        ),
    ]


def _head(snapshot: Any) -> dict[str, Any]:
    fields = dataclasses.asdict(snapshot)
    for volatile in ("updated_at", "started_at", "trace", "session_version"):
        fields.pop(volatile, None)
    fields["timeline"] = _untimed_rows(fields.get("timeline"))
    return fields


def _untimed_rows(value: Any) -> Any:
    """The timeline with its wall-clock times (its only floats) replaced by a mark: every store
    keeps the same turns and calls in the same order, stamped at different moments."""
    if isinstance(value, float):
        return "<time>"
    if isinstance(value, dict):
        return {k: _untimed_rows(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_untimed_rows(v) for v in value]
    return value


def _untimed(meta: Any) -> Any:
    """A segment's meta without its wall-clock times (kept: that it has them)."""
    if not meta or "timing" not in meta:
        return meta
    return {**meta, "timing": sorted(meta["timing"])}


async def _record(session: Any, cp: Any, run_id: str) -> tuple[Any, ...]:
    snapshot = await cp.load(run_id)
    return (
        _head(snapshot) if snapshot is not None else None,
        [(s.run_id, s.entries, _untimed(s.meta)) for s in await session.segments("chat")],
        await session.load("chat"),
    )


async def _scenario(session: Any, cp: Any) -> list[Any]:
    seen: list[Any] = []
    first = await Runner.run(
        _agents(),
        _input(),
        session=session,
        session_id="chat",
        checkpoint=CheckpointOptions(cp, "r1"),
    )
    seen.append((first.output, first.turns, first.final_agent.name, first.usage, first.entries))
    seen.append(await _record(session, cp, "r1"))
    # replay: same answer, nothing new stored
    again = await Runner.run(
        Agent("front", model=ScriptedProvider([]), handoffs=[Agent("helper")]),
        "ignored",
        session=session,
        session_id="chat",
        checkpoint=CheckpointOptions(cp, "r1"),
    )
    seen.append((again.output, again.turns, again.finish_reason, again.entries == first.entries))
    seen.append(await _record(session, cp, "r1"))
    # fail: refused, unchanged
    with pytest.raises(UserError):
        await Runner.run(
            _agents(),
            "x",
            session=session,
            session_id="chat",
            checkpoint=CheckpointOptions(cp, "r1", if_run_exists="fail"),
        )
    seen.append(await _record(session, cp, "r1"))
    # a second run sees the first as history; delete_on_success drops its checkpoint
    model = ScriptedProvider([text("second")])
    await Runner.run(
        Agent("front", model=model),
        "next",
        session=session,
        session_id="chat",
        checkpoint=CheckpointOptions(cp, "r2", delete_on_success=True),
    )
    seen.append([(m.role, m.content) for m in model.calls[0]])
    seen.append(await _record(session, cp, "r2"))
    # trim and rewind on what the runs wrote
    seen.append(await session.trim_tool_results("chat", keep_chars=3, keep_runs=1))
    seen.append(await _record(session, cp, "r1"))
    seen.append(await session.rewind("chat", keep_entries=4))
    seen.append(await _record(session, cp, "r1"))
    return seen


async def test_every_store_gives_back_what_the_in_memory_store_holds(stores: Any) -> None:
    session, cp = stores
    got = await _scenario(session, cp)
    want = await _scenario(InMemorySession(), InMemoryCheckpointer())
    assert len(got) == len(want)
    for step, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        if mine != theirs and isinstance(mine, tuple):
            for part, (a, b) in enumerate(zip(mine, theirs, strict=True)):
                if a != b and isinstance(a, dict):
                    diff = {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}
                    raise AssertionError(f"step {step} head differs: {str(diff)[:2000]}")
                if a != b and isinstance(a, list):
                    for i, (x, y) in enumerate(zip(a, b, strict=False)):
                        assert x == y, (
                            f"step {step} part {part} item {i}: {str(x)[:1500]} != {str(y)[:1500]}"
                        )
        assert mine == theirs, f"step {step}"
    # and the transcript kept every odd text whole
    outputs = [e.output for e in got[0][4] if e.type == "tool_result"]
    for t in TEXTS:
        assert t in outputs
