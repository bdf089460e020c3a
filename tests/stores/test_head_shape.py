"""RunHead / RunSnapshot: lovia 0.9.119's positional shape, the JSON codecs, the approval and
budget fields, and ``update_head``, on every backend (issue 12)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest

from lovia import UserError
from lovia.checkpointer import (
    CheckpointOptions,
    PendingApproval,
    RunHead,
    RunSnapshot,
)
from lovia.transcript import InputEntry, ToolCallEntry
from lovia.usage import Usage

from .backends import Backend, checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]

APPROVAL = PendingApproval(
    call_id="c1",
    tool_name="pay",
    arguments='{"amount": 12}',
    digest="sha256:abc",
    agent_name="cashier",
    requested_at=1_700_000_000.5,
)


def full_head(**changes: Any) -> RunHead:
    head = RunHead(
        "cashier",
        Usage(10, 5, 2, 1),
        3,
        "running",
        None,
        None,
        812,
        {"ratio": 0.8},
        1_700_000_100.0,
        "billing",
        1_700_000_000.0,
        session_id="s1",
        started_calls=("c0",),
        session_version=4,
        turn_agent="triage",
        pending_approvals=(APPROVAL,),
        budget={"spent_usd": 0.25, "tool_calls": 2},
        # when turns and calls ran, for `lovia runs show` (issue 36); a call still running
        timeline={
            "turns": [[3, "triage", 1_700_000_090.0, 1_700_000_091.5, 800, 12]],
            "calls": [["c0", "pay", 1_700_000_091.6, None, None]],
        },
    )
    return dataclasses.replace(head, **changes)


def test_positional_fields_are_0_9_119s_in_its_order() -> None:
    head = full_head()
    assert (head.last_input_tokens, head.context_state, head.updated_at) == (
        812,
        {"ratio": 0.8},
        1_700_000_100.0,
    )
    assert (head.pending_handoff, head.started_at) == ("billing", 1_700_000_000.0)
    snap = RunSnapshot("r1", "cashier", [], Usage(1, 1), 2, "completed", "ok", None, 7)
    assert (snap.status, snap.output, snap.last_input_tokens) == ("completed", "ok", 7)
    with pytest.raises(TypeError):
        RunHead("a", Usage(), 0, "running", None, None, None, {}, 1.0, None, None, "s1")  # type: ignore[misc]


def test_head_and_snapshot_round_trip_through_dicts_and_json() -> None:
    head = full_head()
    assert RunHead.from_dict(head.to_dict()) == head
    assert RunHead.from_json(head.to_json()) == head
    snap = RunSnapshot.from_parts("r1", [InputEntry(content="hi")], head)
    again = RunSnapshot.from_json(snap.to_json())
    assert again == snap
    assert again.head == head
    data = snap.to_dict()
    assert data["run_id"] == "r1"
    assert data["entries"] == [{"type": "input", "role": "user", "content": "hi"}]
    assert data["pending_approvals"][0]["digest"] == "sha256:abc"
    assert PendingApproval.from_dict(APPROVAL.to_dict()) == APPROVAL


def test_a_0_9_119_head_dict_reads() -> None:
    """The dict 0.9.119's RunHead.to_dict() writes (as stored in its files)."""
    data = {
        "agent_name": "calc",
        "usage": {"input_tokens": 2, "output_tokens": 2, "cache_read_tokens": 0,
                  "cache_write_tokens": 0},
        "turns": 2,
        "status": "completed",
        "output": "2 + 3 = 5",
        "error": None,
        "last_input_tokens": 1,
        "context_state": {"context": {"version": 3}},
        "pending_handoff": None,
        "updated_at": 1796256673.3,
        "started_at": 1796256673.2,
    }  # fmt: skip
    head = RunHead.from_dict(data)
    assert head.usage == Usage(2, 2) and head.last_input_tokens == 1
    assert head.started_at == 1796256673.2 and head.pending_approvals == ()
    assert head.budget == {} and head.session_id is None and head.timeline == {}
    assert "timeline" not in head.to_dict()  # and it writes back what 0.9.119 wrote


def test_checkpoint_options_take_if_run_exists_positionally() -> None:
    from lovia import InMemoryCheckpointer

    cp = InMemoryCheckpointer()
    options = CheckpointOptions(cp, "r1", "restart", True)
    assert (options.if_run_exists, options.delete_on_success) == ("restart", True)
    assert options.resolved_run_id == "r1"
    with pytest.raises(UserError):
        CheckpointOptions(cp, "r1", "sometimes")  # type: ignore[arg-type]


async def test_every_head_field_is_stored(checkpointer: Any) -> None:
    head = full_head()
    await checkpointer.append("r1", [InputEntry(content="pay 12")], head)
    snap = await checkpointer.load("r1")
    assert snap is not None
    assert snap.head == head


async def test_update_head_changes_only_the_head(checkpointer: Any) -> None:
    entries = [InputEntry(content="pay 12"), ToolCallEntry(call_id="c1", name="pay")]
    await checkpointer.append("r1", entries, full_head(pending_approvals=()))

    def ask(head: RunHead) -> RunHead:
        return dataclasses.replace(head, pending_approvals=(APPROVAL,), status="interrupted")

    new = await checkpointer.update_head("r1", ask)
    assert new is not None and new.pending_approvals == (APPROVAL,)
    snap = await checkpointer.load("r1")
    assert snap is not None
    assert snap.entries == entries
    assert snap.status == "interrupted" and snap.pending_approvals == (APPROVAL,)
    # None from the function keeps the head
    kept = await checkpointer.update_head("r1", lambda head: None)
    assert kept == snap.head
    assert await checkpointer.update_head("missing", ask) is None
    with pytest.raises(UserError):
        await checkpointer.update_head("r1", lambda head: {"status": "failed"})  # type: ignore[arg-type,return-value]
    after = await checkpointer.load("r1")
    assert after is not None and after.head == snap.head


async def test_concurrent_update_heads_lose_no_change(
    checkpoint_backend: Backend,
) -> None:
    """Each update reads the head it replaces: 20 increments from two stores all land."""
    first, second = checkpoint_backend.open(), checkpoint_backend.open()
    await first.append("r1", [], full_head(budget={"n": 0}))

    def bump(head: RunHead) -> RunHead:
        return dataclasses.replace(head, budget={"n": head.budget["n"] + 1})

    await asyncio.gather(
        *(store.update_head("r1", bump) for store in [first, second] * 10)  # type: ignore[attr-defined]
    )
    snap = await first.load("r1")
    assert snap is not None and snap.budget == {"n": 20}


def test_the_head_json_is_plain_json() -> None:
    text = full_head().to_json()
    assert json.loads(text)["budget"] == {"spent_usd": 0.25, "tool_calls": 2}


async def test_a_session_subclass_needs_only_segments_append_and_clear() -> None:
    """As in 0.9.119, ``load`` defaults to the concatenation of ``segments``."""
    from lovia.session import Segment, Session

    class ListSession(Session):
        def __init__(self) -> None:
            self.stored: list[Segment] = []

        async def segments(self, session_id: str) -> list[Segment]:
            return list(self.stored)

        async def append(self, session_id: str, entries: Any, **kw: Any) -> str:
            self.stored.append(Segment(kw.get("run_id") or "r", list(entries)))
            return self.stored[-1].run_id

        async def clear(self, session_id: str) -> None:
            self.stored.clear()

    store = ListSession()
    await store.append("s", [InputEntry(content="a")], run_id="r1")
    await store.append("s", [InputEntry(content="b")], run_id="r2")
    assert await store.load("s") == [InputEntry(content="a"), InputEntry(content="b")]
