"""A chat held for a short edit is waited for; a chat held by a run is refused.

Two supervisors on one SQLite file stand for two servers sharing their stores. A request
that meets another server's rewind (a brief hold) waits for it instead of answering 409:
otherwise a page's edit (rewind, then send) lost its message whenever another server's
doomed rewind held the chat in between (seen in CI, tests/web/test_two_servers.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession
from lovia.chats import ChatBook, ChatBusy, RunSupervisor

from .apps import slow


def _server(db: Path) -> RunSupervisor:
    book = ChatBook(SQLiteSession(db), SQLiteCheckpointer(db))
    return RunSupervisor(slow, book, probe=False)


async def _question() -> str:
    return "q1"


async def test_a_run_waits_for_another_servers_brief_hold(tmp_path: Path) -> None:
    one, two = _server(tmp_path / "c.db"), _server(tmp_path / "c.db")
    held = asyncio.Event()
    released = asyncio.Event()

    async def rewind_on_one() -> None:
        async with one.claimed("c"):
            held.set()
            await asyncio.sleep(0.5)
        released.set()

    editing = asyncio.create_task(rewind_on_one())
    await held.wait()
    prepared_after_release: list[bool] = []

    async def prepare() -> str:
        prepared_after_release.append(released.is_set())
        return "q1"

    run = await two.begin("c", prepare)  # waits for the edit, then runs
    await run.finished.wait()
    await editing
    assert prepared_after_release == [True]
    assert run.events[-1]["type"] == "run_completed", run.events[-1]


async def test_a_brief_hold_waits_for_another_brief_hold(tmp_path: Path) -> None:
    one, two = _server(tmp_path / "c.db"), _server(tmp_path / "c.db")
    order: list[str] = []
    held = asyncio.Event()

    async def hold(sup: RunSupervisor, name: str, first: bool) -> None:
        async with sup.claimed("c"):
            order.append(f"{name} in")
            if first:
                held.set()
                await asyncio.sleep(0.3)
            order.append(f"{name} out")

    a = asyncio.create_task(hold(one, "one", True))
    await held.wait()
    await hold(two, "two", False)
    await a
    assert order == ["one in", "one out", "two in", "two out"]


async def test_a_run_is_still_refused_at_once_by_another_servers_run(tmp_path: Path) -> None:
    one, two = _server(tmp_path / "c.db"), _server(tmp_path / "c.db")
    run = await one.begin("c", _question)
    try:
        with pytest.raises(ChatBusy, match="busy on another server"):
            await two.begin("c", _question)
        with pytest.raises(ChatBusy, match="busy on another server"):
            async with two.claimed("c"):
                pass
    finally:
        await run.finished.wait()
    assert run.events[-1]["type"] == "run_completed"


async def test_one_server_waits_for_its_own_brief_hold(tmp_path: Path) -> None:
    one = _server(tmp_path / "c.db")
    held = asyncio.Event()

    async def rewind() -> None:
        async with one.claimed("c"):
            held.set()
            await asyncio.sleep(0.3)

    editing = asyncio.create_task(rewind())
    await held.wait()
    run = await one.begin("c", _question)
    await run.finished.wait()
    await editing
    assert run.events[-1]["type"] == "run_completed"
