"""Issue 33 across processes: two ``lovia web`` servers on one PostgreSQL database fork the
same chat, and the same run, into one new id at once. One fork is written, the other server
answers ``409 fork_exists``, and what is stored is one whole fork."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lovia import Agent, CheckpointOptions, Runner
from lovia.stores.open import open_stores
from lovia.testing import ScriptedProvider, call, text

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from ..web_server import start_web, stop_web
from .apps import pay


async def _fill(dsn: str, prefix: str) -> None:
    session, cp = open_stores(dsn, table_prefix=prefix)
    try:
        first = Agent("payer", model=ScriptedProvider([text("hello back")]))
        await Runner.run(
            first, "hello", session=session, session_id="c1", checkpoint=CheckpointOptions(cp, "r0")
        )
        model = ScriptedProvider([call("pay", {"amount": 1, "to": "x"}), text("paid")])
        second = Agent("payer", model=model, tools=[pay])
        await Runner.run(
            second,
            "pay x",
            session=session,
            session_id="c1",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
    finally:
        for store in (session, cp):
            close = getattr(store, "close", None)
            if close is not None:
                await close()


@pytest.fixture
def two(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    monkeypatch.setenv("LOVIA_TEST_PAID", str(tmp_path / "paid.txt"))
    procs = []
    try:
        asyncio.run(_fill(dsn, prefix))
        command = [sys.executable, "-m", "tests.web.serve", "--app", "tests.web.apps:paying"]
        command += ["--db", dsn, "--prefix", prefix]
        for _ in range(2):
            proc, base = start_web(command, quiet=True)
            procs.append((proc, base))
        yield procs[0][1], procs[1][1]
    finally:
        for proc, _ in procs:
            stop_web(proc)
        drop_prefix(dsn, prefix)


async def _both(urls: list[str], bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=30) as client:
        posts = (client.post(u, json=b) for u, b in zip(urls, bodies, strict=True))
        return list(await asyncio.gather(*posts))


def _roles(detail: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in detail["entries"]]


def test_two_servers_fork_one_chat_into_one_id(two: tuple[str, str]) -> None:
    a, b = two
    source = _roles(httpx.get(f"{a}/api/sessions/c1").json())
    for n in range(3):
        new = f"same-{n}"
        urls = [f"{a}/api/sessions/c1/fork", f"{b}/api/sessions/c1/fork"]
        replies = asyncio.run(_both(urls, [{"new_id": new}] * 2))
        assert sorted(r.status_code for r in replies) == [200, 409], [r.text for r in replies]
        lost = next(r for r in replies if r.status_code == 409)
        assert lost.json()["detail"]["code"] == "fork_exists"
        for server in (a, b):  # both see one whole copy
            assert _roles(httpx.get(f"{server}/api/sessions/{new}").json()) == source


def test_two_servers_fork_one_run_into_one_run_id(two: tuple[str, str]) -> None:
    a, b = two
    urls = [f"{a}/api/runs/r1/fork", f"{b}/api/runs/r1/fork"]
    bodies = [
        {"at_turn": 1, "new_run_id": "twin", "session_id": "twin-a"},
        {"at_turn": 1, "new_run_id": "twin", "session_id": "twin-b"},
    ]
    replies = asyncio.run(_both(urls, bodies))
    assert sorted(r.status_code for r in replies) == [200, 409], [r.text for r in replies]
    won = next(r for r in replies if r.status_code == 200).json()["session_id"]
    lost = ({"twin-a", "twin-b"} - {won}).pop()
    for server in (a, b):
        assert httpx.get(f"{server}/api/sessions/{lost}").json()["entries"] == []
        users = [
            c for r, c in _roles(httpx.get(f"{server}/api/sessions/{won}").json()) if r == "user"
        ]
        assert users == ["hello"]  # the history before the run; the run waits to resume
