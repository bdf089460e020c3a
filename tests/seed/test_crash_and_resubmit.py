"""Crashed workers (real processes killed with SIGKILL) and re-submitted calls, on SQLite
(journal and WAL mode) and PostgreSQL, from the seed page's Checkpoint section.

The worker (``worker.py``) is one ``Runner.run`` with a session and a checkpoint; a crash is
the worker killing itself inside a tool or just before the session append. Every check reads
the stores from this process afterwards, through the public API.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any
from uuid import uuid4

from .conftest import Store, run_worker

KILLED = -signal.SIGKILL

# turn 1 calls a, turn 2 calls b, turn 3 answers
THREE_TURNS = [["call", "a", {}, "ca"], ["call", "b", {}, "cb"], ["text", "done: a and b"]]


def config(store: Store, tmp_path: Path, run_id: str, **kw: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "store": store.spec,
        "run_id": run_id,
        "session_id": "s1",
        "input": "do the job",
        "log": str(tmp_path / "tools.log"),
        "script": THREE_TURNS,
    }
    cfg.update(kw)
    return cfg


def tool_log(tmp_path: Path) -> list[str]:
    path = tmp_path / "tools.log"
    if not path.exists():
        return []
    return [line.split(" run=")[0] for line in path.read_text().splitlines()]


async def read(store: Store, run_id: str) -> tuple[Any, list[Any]]:
    """(snapshot, session segments of "s1") as a fresh process would see them."""
    session, cp = store.open()
    try:
        return await cp.load(run_id), await session.segments("s1")
    finally:
        await session.close()
        await cp.close()


def kinds(entries: list[Any]) -> list[str]:
    return [f"{e.type}:{getattr(e, 'call_id', '')}".rstrip(":") for e in entries]


FULL_RUN = [
    "input",
    *["tool_call:ca", "tool_result:ca", "tool_call:cb", "tool_result:cb"],
    "assistant_text",
]


async def test_a_worker_killed_inside_a_tool_is_finished_by_resubmitting_the_same_call(
    store: Store, tmp_path: Path
) -> None:
    """C2, C6, C10, S6, E2: the crash keeps every saved step; re-submitting the same call
    re-runs only the dangling call (same turn number), asks the model only for what is left,
    and writes the session once."""
    rid = f"job-{uuid4().hex}"
    crashed = run_worker(config(store, tmp_path, rid, kill={"tool": "b"}))
    assert crashed.returncode == KILLED, crashed.stderr
    snap, segments = await read(store, rid)
    assert snap is not None and snap.status == "running"
    assert kinds(snap.entries) == ["input", "tool_call:ca", "tool_result:ca", "tool_call:cb"]
    assert segments == []  # an unfinished run is not in the session (S6)

    again = run_worker(config(store, tmp_path, rid, script=[["text", "done: a and b"]]))
    assert again.returncode == 0, again.stderr
    assert again.answer is not None and again.answer["output"] == "done: a and b"
    assert again.answer["model_calls"] == 1
    assert tool_log(tmp_path) == ["a turn=1", "b turn=2", "b turn=2"]
    snap, segments = await read(store, rid)
    assert snap is not None and snap.status == "completed" and snap.turns == 3
    assert [s.run_id for s in segments] == [rid]
    assert kinds(segments[0].entries) == FULL_RUN


async def test_resubmitting_a_completed_run_replays_it_without_model_or_tools(
    store: Store, tmp_path: Path
) -> None:
    """C5 "resume", C6, C8, E1, S5: the same id again, with other input, is a replay: the
    stored answer, no model call (the script is empty), no tool, one session segment."""
    rid = f"job-{uuid4().hex}"
    first = run_worker(config(store, tmp_path, rid))
    assert first.returncode == 0 and first.answer is not None, first.stderr
    for new_input in ("do the job", "something else entirely"):
        replay = run_worker(config(store, tmp_path, rid, input=new_input, script=[]))
        assert replay.returncode == 0, replay.stderr
        assert replay.answer is not None
        assert replay.answer["output"] == "done: a and b"
        assert replay.answer["model_calls"] == 0 and replay.answer["finish_reason"] is None
        assert replay.answer["turns"] == 3
    assert tool_log(tmp_path) == ["a turn=1", "b turn=2"]
    snap, segments = await read(store, rid)
    assert snap is not None and snap.status == "completed"
    assert [s.run_id for s in segments] == [rid] and kinds(segments[0].entries) == FULL_RUN


async def test_a_result_saved_in_a_parallel_turn_survives_a_crash_of_its_sibling(
    store: Store, tmp_path: Path
) -> None:
    """C2, C10: two calls of one turn run together; a finishes and is saved, then the process
    dies inside b. On resume only b runs again."""
    rid = f"job-{uuid4().hex}"
    script = [["batch", [["a", {}, "ca"], ["b", {}, "cb"]]], ["text", "both done"]]
    kill = {"tool": "b", "after_result_of": "ca"}
    crashed = run_worker(config(store, tmp_path, rid, script=script, kill=kill, parallel=True))
    assert crashed.returncode == KILLED, crashed.stderr
    again = run_worker(config(store, tmp_path, rid, script=[["text", "both done"]], parallel=True))
    assert again.answer is not None and again.answer["output"] == "both done", again.stderr
    assert sorted(tool_log(tmp_path)) == ["a turn=1", "b turn=1", "b turn=1"]


async def test_a_crash_between_checkpoint_completed_and_session_append_is_repaired_by_replay(
    store: Store, tmp_path: Path
) -> None:
    """C12, C8, S5: the checkpoint is completed first; a worker killed before the session
    append leaves the session without the run; the re-submitted call replays (no model) and
    writes the segment; a third submission writes nothing more."""
    rid = f"job-{uuid4().hex}"
    crashed = run_worker(config(store, tmp_path, rid, kill={"append": True}))
    assert crashed.returncode == KILLED, crashed.stderr
    snap, segments = await read(store, rid)
    assert snap is not None and snap.status == "completed" and segments == []
    for _ in range(2):
        replay = run_worker(config(store, tmp_path, rid, script=[]))
        assert replay.answer is not None, replay.stderr
        assert replay.answer["output"] == "done: a and b"
    snap, segments = await read(store, rid)
    assert [s.run_id for s in segments] == [rid] and kinds(segments[0].entries) == FULL_RUN
    assert tool_log(tmp_path) == ["a turn=1", "b turn=2"]


async def test_resume_only_with_no_input_finishes_a_crashed_run_from_its_original_input(
    store: Store, tmp_path: Path
) -> None:
    """C7: `Runner.run(agent, [], checkpoint=CheckpointOptions(cp, rid, if_run_exists=
    "resume_only"))` continues the run; the model sees the original input, once."""
    rid = f"job-{uuid4().hex}"
    assert run_worker(config(store, tmp_path, rid, kill={"tool": "a"})).returncode == KILLED
    again = run_worker(
        config(store, tmp_path, rid, input=[], if_run_exists="resume_only", script=THREE_TURNS[1:])
    )
    assert again.answer is not None and again.answer["output"] == "done: a and b", again.stderr
    assert {tuple(m) for m in again.answer["user_messages_seen"]} == {("user", "do the job")}
    assert tool_log(tmp_path) == ["a turn=1", "a turn=1", "b turn=2"]


async def test_resume_only_for_an_unknown_id_is_a_user_error_that_stores_nothing(
    store: Store, tmp_path: Path
) -> None:
    """C5 "resume_only" without a stored run: UserError (with a hint), nothing stored."""
    rid = f"job-{uuid4().hex}"
    refused = run_worker(config(store, tmp_path, rid, input=[], if_run_exists="resume_only"))
    assert refused.answer is not None and "user_error" in refused.answer, refused.stderr
    assert refused.answer["hint"]
    snap, segments = await read(store, rid)
    assert snap is None and segments == [] and tool_log(tmp_path) == []


async def test_fail_policy_refuses_a_crashed_run_and_leaves_it_as_it_was(
    store: Store, tmp_path: Path
) -> None:
    """C5 "fail": a stored run raises UserError; its snapshot is unchanged."""
    rid = f"job-{uuid4().hex}"
    assert run_worker(config(store, tmp_path, rid, kill={"tool": "b"})).returncode == KILLED
    before, _ = await read(store, rid)
    refused = run_worker(config(store, tmp_path, rid, if_run_exists="fail"))
    assert refused.answer is not None and "user_error" in refused.answer, refused.stderr
    after, segments = await read(store, rid)
    assert after == before and segments == []
    assert tool_log(tmp_path) == ["a turn=1", "b turn=2"]


async def test_restart_policy_drops_a_crashed_run_and_starts_again_with_the_new_input(
    store: Store, tmp_path: Path
) -> None:
    """C5 "restart": the stored run is dropped; the new call runs from its own input."""
    rid = f"job-{uuid4().hex}"
    assert run_worker(config(store, tmp_path, rid, kill={"tool": "b"})).returncode == KILLED
    fresh = run_worker(config(store, tmp_path, rid, input="a new job", if_run_exists="restart"))
    assert fresh.answer is not None and fresh.answer["output"] == "done: a and b", fresh.stderr
    assert fresh.answer["user_messages_seen"] == [["user", "a new job"]] * 3
    snap, segments = await read(store, rid)
    assert snap is not None and snap.status == "completed"
    assert snap.entries[0].content == "a new job"
    assert [s.run_id for s in segments] == [rid]


async def test_delete_on_success_keeps_a_crashed_run_and_deletes_it_once_finished(
    store: Store, tmp_path: Path
) -> None:
    """C9: delete_on_success keeps the snapshot of a crashed run (it must resume), and
    deletes it after the resumed run completed and reached the session."""
    rid = f"job-{uuid4().hex}"
    crashed = run_worker(config(store, tmp_path, rid, kill={"tool": "b"}, delete_on_success=True))
    assert crashed.returncode == KILLED
    snap, _ = await read(store, rid)
    assert snap is not None and snap.status == "running"
    again = run_worker(
        config(store, tmp_path, rid, script=[["text", "done: a and b"]], delete_on_success=True)
    )
    assert again.answer is not None and again.answer["output"] == "done: a and b", again.stderr
    snap, segments = await read(store, rid)
    assert snap is None
    assert [s.run_id for s in segments] == [rid] and kinds(segments[0].entries) == FULL_RUN


async def test_two_workers_resubmitting_one_crashed_run_at_once_end_with_one_segment(
    store: Store, tmp_path: Path
) -> None:
    """S5, C6: two re-submissions of the same crashed call racing each other both get the
    answer, and the session holds the run exactly once."""
    rid = f"job-{uuid4().hex}"
    assert run_worker(config(store, tmp_path, rid, kill={"tool": "b"})).returncode == KILLED
    cfg = config(store, tmp_path, rid, script=[["text", "done: a and b"]])
    done = await asyncio.gather(*(asyncio.to_thread(run_worker, cfg) for _ in range(2)))
    outputs = [d.answer.get("output") if d.answer else d.stderr[-300:] for d in done]
    assert outputs == ["done: a and b"] * 2
    _, segments = await read(store, rid)
    assert [s.run_id for s in segments] == [rid] and kinds(segments[0].entries) == FULL_RUN
