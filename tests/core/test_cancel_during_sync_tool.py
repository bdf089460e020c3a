"""A run cancelled while a sync tool runs on its thread waits a short while for the thread:
a tool that returns in time keeps its result (saved in the checkpoint, so a resume does not
run it again and its effect happens once); one that outlives the wait is left running and the
run stops without it, its call in flight for the resume. Async tools are cancelled at once.
The blocking tools wait on events the test sets; nothing here depends on how long a step takes.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CancelToken,
    CheckpointOptions,
    RunCancelled,
    Runner,
    SQLiteCheckpointer,
    ToolResultEntry,
    UserError,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, batch, call, text


class Blocking:
    """A sync tool ``pay`` that blocks on its thread until released, counting its effects."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.started = asyncio.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.effects: list[int] = []

    def body(self, n: int) -> str:
        self.loop.call_soon_threadsafe(self.started.set)
        self.release.wait(60)
        self.effects.append(n)  # the effect: it happens whether or not the run keeps the result
        self.finished.set()
        return f"paid {n}"


def results(entries: list[Any]) -> dict[str, str]:
    return {e.call_id: e.output for e in entries if isinstance(e, ToolResultEntry)}


async def resume(path: Path, run_id: str, tools: list[Any]) -> tuple[Any, ScriptedProvider]:
    model = ScriptedProvider([text("resumed")])
    async with SQLiteCheckpointer(path) as cp:
        result = await Runner.run(
            Agent("assistant", model=model, tools=tools),
            [],
            checkpoint=CheckpointOptions(cp, run_id, if_run_exists="resume_only"),
        )
    return result, model


async def stored(path: Path, run_id: str) -> Any:
    async with SQLiteCheckpointer(path) as cp:
        return await cp.load(run_id)


async def test_a_sync_tool_that_returns_soon_after_the_cancel_keeps_its_result(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    pay = Blocking(asyncio.get_running_loop())
    tools = [tool(name="pay")(pay.body)]
    model = ScriptedProvider([call("pay", {"n": 1}), text("never")])
    token = CancelToken()
    async with SQLiteCheckpointer(path) as cp:
        run = asyncio.ensure_future(
            Runner.run(
                Agent("assistant", model=model, tools=tools),
                "pay once",
                cancel_token=token,
                checkpoint=CheckpointOptions(cp, "r1"),
            )
        )
        await pay.started.wait()
        token.cancel("stop")
        pay.release.set()  # the thread returns while the run is stopping
        with pytest.raises(RunCancelled, match="stop"):
            await run
    assert len(model.calls) == 1  # it stopped after the tool, before another model turn
    snap = await stored(path, "r1")
    assert snap.status == "interrupted"
    assert results(snap.entries) == {"call_pay": "paid 1"}
    assert not snap.head.started_calls

    result, resumed_model = await resume(path, "r1", tools)
    assert result.output == "resumed"
    assert pay.effects == [1]  # the resume did not run it again
    assert resumed_model.calls[0][-1].content == "paid 1"  # the model sees the kept result


async def test_a_streamed_run_cancelled_by_its_handle_keeps_the_sync_result(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    pay = Blocking(asyncio.get_running_loop())
    tools = [tool(name="pay")(pay.body)]
    model = ScriptedProvider([call("pay", {"n": 7}), text("never")])
    async with SQLiteCheckpointer(path) as cp:
        handle = Runner.stream(
            Agent("assistant", model=model, tools=tools),
            "pay",
            checkpoint=CheckpointOptions(cp, "r2"),
        )

        async def stop_while_it_pays() -> None:
            await pay.started.wait()
            handle.cancel("user pressed stop")
            pay.release.set()

        stopper = asyncio.ensure_future(stop_while_it_pays())
        seen = [event async for event in handle]
        await stopper
        with pytest.raises(RunCancelled, match="user pressed stop"):
            await handle.result()
    assert isinstance(seen[-1], events.RunFailed)
    completed = [e for e in seen if isinstance(e, events.ToolCallCompleted)]
    assert [e.output for e in completed] == ["paid 7"]
    assert results((await stored(path, "r2")).entries) == {"call_pay": "paid 7"}
    await resume(path, "r2", tools)
    assert pay.effects == [7]


async def test_parallel_calls_keep_the_sync_results_and_an_async_sibling_is_cancelled(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    loop = asyncio.get_running_loop()
    first, second = Blocking(loop), Blocking(loop)
    waiting = asyncio.Event()
    proceed = asyncio.Event()  # set only for the resume: in the run only a cancel ends it
    watch_cancelled = asyncio.Event()
    cancelled: list[str] = []
    runs: list[str] = []

    @tool
    async def watch() -> str:
        runs.append("watch")
        waiting.set()
        try:
            await proceed.wait()
        except asyncio.CancelledError:
            cancelled.append("watch")
            watch_cancelled.set()
            raise
        return "watched"

    tools = [tool(name="pay_a")(first.body), tool(name="pay_b")(second.body), watch]
    script = [batch(("pay_a", {"n": 1}, "a"), ("pay_b", {"n": 2}, "b"), ("watch", {}, "w"))]
    token = CancelToken()
    async with SQLiteCheckpointer(path) as cp:
        run = asyncio.ensure_future(
            Runner.run(
                Agent("assistant", model=ScriptedProvider([*script, text("never")]), tools=tools),
                "go",
                cancel_token=token,
                checkpoint=CheckpointOptions(cp, "r3"),
            )
        )
        await asyncio.gather(first.started.wait(), second.started.wait(), waiting.wait())
        token.cancel("stop")
        await watch_cancelled.wait()  # the run has cancelled the calls still running
        first.release.set()
        second.release.set()
        with pytest.raises(RunCancelled):
            await run
    assert cancelled == ["watch"]
    snap = await stored(path, "r3")
    assert results(snap.entries) == {"a": "paid 1", "b": "paid 2"}  # the async call has none

    proceed.set()
    await resume(path, "r3", tools)
    assert (first.effects, second.effects) == ([1], [2])
    assert runs == ["watch", "watch"]  # only the cancelled async call runs again


async def test_a_sync_tool_with_a_timeout_keeps_its_result_too(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    pay = Blocking(asyncio.get_running_loop())
    tools = [tool(name="pay", timeout=120)(pay.body)]
    token = CancelToken()
    async with SQLiteCheckpointer(path) as cp:
        run = asyncio.ensure_future(
            Runner.run(
                Agent("assistant", model=ScriptedProvider([call("pay", {"n": 3})]), tools=tools),
                "go",
                cancel_token=token,
                checkpoint=CheckpointOptions(cp, "r4"),
            )
        )
        await pay.started.wait()
        token.cancel("stop")
        pay.release.set()
        with pytest.raises(RunCancelled):
            await run
    assert results((await stored(path, "r4")).entries) == {"call_pay": "paid 3"}


async def test_a_sync_tool_that_outlives_the_wait_is_left_running_and_resumes_by_on_resume(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    pay = Blocking(asyncio.get_running_loop())
    tools = [tool(name="pay", on_resume="fail")(pay.body)]
    model = ScriptedProvider([call("pay", {"n": 5}), text("never")])
    token = CancelToken()
    try:
        async with SQLiteCheckpointer(path) as cp:
            run = asyncio.ensure_future(
                Runner.run(
                    Agent("assistant", model=model, tools=tools),
                    "go",
                    cancel_token=token,
                    checkpoint=CheckpointOptions(cp, "r5"),
                )
            )
            await pay.started.wait()
            token.cancel("stop")
            with pytest.raises(RunCancelled, match="stop"):
                await run
            assert not pay.finished.is_set()  # the run stopped while its tool still ran
    finally:
        pay.release.set()
    assert await asyncio.to_thread(pay.finished.wait, 60)  # it ends on its own thread
    snap = await stored(path, "r5")
    assert snap.status == "interrupted"
    assert results(snap.entries) == {}  # its late result was not kept
    assert list(snap.head.started_calls) == ["call_pay"]
    with pytest.raises(UserError, match="in flight"):  # on_resume="fail": a person checks
        await resume(path, "r5", tools)
    assert pay.effects == [5]


async def test_an_async_tool_is_cancelled_at_once_and_runs_again_on_resume(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    started = asyncio.Event()
    release = asyncio.Event()
    outcomes: list[str] = []

    @tool
    async def pay(n: int) -> str:
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            outcomes.append("cancelled")
            raise
        outcomes.append(f"paid {n}")
        return f"paid {n}"

    token = CancelToken()
    async with SQLiteCheckpointer(path) as cp:
        run = asyncio.ensure_future(
            Runner.run(
                Agent("assistant", model=ScriptedProvider([call("pay", {"n": 9})]), tools=[pay]),
                "go",
                cancel_token=token,
                checkpoint=CheckpointOptions(cp, "r6"),
            )
        )
        await started.wait()
        token.cancel("stop")
        with pytest.raises(RunCancelled, match="stop"):
            await run  # the tool is never released: only its cancellation ends the run
    assert outcomes == ["cancelled"]
    assert results((await stored(path, "r6")).entries) == {}
    release.set()
    result, _ = await resume(path, "r6", [pay])
    assert result.output == "resumed"
    assert outcomes == ["cancelled", "paid 9"]


async def test_cancelling_the_task_of_the_run_stops_it_at_once_without_the_wait(
    tmp_path: Path,
) -> None:
    # asyncio's own cancel means "now": the sync call is abandoned on the spot, so a result
    # its thread returns right after is not kept (the token and the handle wait for it)
    path = tmp_path / "runs.db"
    pay = Blocking(asyncio.get_running_loop())
    tools = [tool(name="pay")(pay.body)]
    async with SQLiteCheckpointer(path) as cp:
        run = asyncio.ensure_future(
            Runner.run(
                Agent("assistant", model=ScriptedProvider([call("pay", {"n": 4})]), tools=tools),
                "go",
                checkpoint=CheckpointOptions(cp, "r7"),
            )
        )
        await pay.started.wait()
        run.cancel()
        pay.release.set()
        with pytest.raises(asyncio.CancelledError):
            await run
    assert await asyncio.to_thread(pay.finished.wait, 60)
    assert pay.effects == [4]
    snap = await stored(path, "r7")
    assert snap.status == "interrupted"
    assert results(snap.entries) == {}
