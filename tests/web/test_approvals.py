"""Approvals in the web chat (issue 15): a run parks on a call that needs approval, the page
shows it from the checkpoint head, and a decision resumes it; across a server restart, on
two servers sharing one database, and with Stop while calls wait.

Real ``lovia web`` processes on a SQLite file (and PostgreSQL for the two-server race); the
model is a stateless scripted provider, the tool writes one line per real payment.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import SQLiteCheckpointer, SQLiteSession

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from ..web_server import start_web as _start
from ..web_server import stop_web as _stop
from .apps import PAYEE

LOVIA = Path(sys.executable).with_name("lovia")


class Servers:
    """``lovia web`` processes serving ``tests.web.apps:paying`` on one database."""

    def __init__(
        self, db: str, ledger: Path, prefix: str | None = None, lease_ttl: str | None = "2"
    ) -> None:
        self.lease_ttl = lease_ttl  # None: the server's default
        self.db = db
        self.ledger = ledger
        self.prefix = prefix
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> str:
        os.environ["LOVIA_TEST_PAID"] = str(self.ledger)
        if self.prefix is None:
            command = [str(LOVIA), "web", "--app", "tests.web.apps:paying", "--db", self.db]
        else:
            command = [sys.executable, "-m", "tests.web.serve", "--app", "tests.web.apps:paying"]
            command += ["--db", self.db, "--prefix", self.prefix]
        ttl = [] if self.lease_ttl is None else ["--lease-ttl", self.lease_ttl]
        proc, base = _start([*command, *ttl])
        self.procs.append(proc)
        return base

    def stop(self, base: str | None = None) -> None:
        for proc in self.procs:
            _stop(proc)
        self.procs.clear()

    def payments(self) -> list[str]:
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    old = os.environ.get("LOVIA_TEST_PAID")
    found = Servers(str(tmp_path / "lovia.db"), tmp_path / "paid.txt")
    try:
        yield found
    finally:
        found.stop()
        if old is None:
            os.environ.pop("LOVIA_TEST_PAID", None)
        else:
            os.environ["LOVIA_TEST_PAID"] = old


def park(base: str, chat: str) -> dict[str, Any]:
    """Send a message that makes the model ask to pay, read its stream until the run is
    parked (the stream itself waits on for the decision), and return the parked run."""
    body = {"message": "pay bob", "session_id": chat}
    seen: list[str] = []
    with httpx.stream("POST", f"{base}/api/chat/stream", json=body, timeout=60) as sent:
        assert sent.status_code == 200
        for line in sent.iter_lines():
            if line.startswith("event:"):
                seen.append(line[6:].strip())
                if seen[-1] == "parked":
                    break
    assert "approval_required" in seen and seen[-1] == "parked", seen
    pending = httpx.get(f"{base}/api/sessions/{chat}").json()["pending"]
    assert pending["awaiting_approval"] is True
    return dict(pending)


def decide(base: str, chat: str, call_id: str, approve: bool, reason: str | None = None) -> Any:
    body = {
        "session_id": chat,
        "call_id": call_id,
        "decision": "approve" if approve else "deny",
        "reason": reason,
    }
    return httpx.post(f"{base}/api/chat/approve", json=body, timeout=60)


def settled(base: str, chat: str) -> dict[str, Any]:
    """The chat once its run has ended (the one a decision resumed)."""
    for _ in range(600):
        chat_now: dict[str, Any] = httpx.get(f"{base}/api/sessions/{chat}").json()
        if chat_now["live"] is None:
            return chat_now
        time.sleep(0.05)
    raise AssertionError(f"chat {chat} is still answering")


def last_answer(chat: dict[str, Any]) -> str:
    return str([m["content"] for m in chat["entries"] if m["role"] == "assistant"][-1])


def stored(db: str, chat: str) -> list[Any]:
    async def read() -> list[Any]:
        async with SQLiteSession(db, wal=True) as s:
            return [(seg.run_id, seg.meta, seg.entries) for seg in await s.segments(chat)]

    return asyncio.run(read())


def snapshot(db: str, run_id: str) -> Any:
    async def read() -> Any:
        async with SQLiteCheckpointer(db, wal=True) as cp:
            return await cp.load(run_id)

    return asyncio.run(read())


def rows(db: str) -> list[Any]:
    """Every row of every table: a refused request must leave the file's content as it was
    (the chat claim's lease row aside: a refused request may have held and let it go)."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = []
        for t in sorted(tables):
            if "lease" in t:
                continue
            out.append((t, sorted(map(repr, conn.execute(f"SELECT * FROM {t}").fetchall()))))
        return out


def test_the_parked_call_shows_with_its_tool_and_raw_arguments(servers: Servers) -> None:
    base = servers.start()
    pending = park(base, "c1")
    [approval] = pending["approvals"]
    assert approval["tool_name"] == "pay" and approval["decision"] is None
    assert json.loads(approval["arguments"]) == {"amount": 5, "to": PAYEE}
    assert [e["type"] for e in pending["entries"]] == ["input", "tool_call"]
    listed = httpx.get(f"{base}/api/sessions").json()
    assert listed[0]["pending"]["awaiting_approval"] is True
    [offered] = httpx.get(f"{base}/api/runs/resumable").json()
    assert offered["awaiting_approval"] is True and offered["status"] == "interrupted"
    assert servers.payments() == []


def test_approve_after_a_restart_runs_the_tool_once(servers: Servers) -> None:
    base = servers.start()
    call_id = park(base, "c1")["approvals"][0]["call_id"]
    servers.stop()  # the decision comes to a new process: the state is in the checkpoint
    base = servers.start()
    decided = decide(base, "c1", call_id, True)
    assert decided.status_code == 200, decided.text
    run_id = decided.json()["run_id"]
    chat = settled(base, "c1")
    assert last_answer(chat) == f"after the payment: paid 5 to {PAYEE}"
    assert servers.payments() == [f"5 {PAYEE}"]
    assert chat["pending"] is None
    assert [m["role"] for m in chat["entries"]] == ["user", "assistant", "tool", "assistant"]
    [record] = httpx.get(f"{base}/api/runs/history", params={"session_id": "c1"}).json()
    assert (record["run_id"], record["status"]) == (run_id, "completed")
    # the same decision again, or the other one: refused, nothing written, nothing run
    before = rows(servers.db)
    for approve in (True, False):
        again = decide(base, "c1", call_id, approve)
        assert again.status_code == 404, again.text
        assert again.json()["detail"]["code"] == "approval_not_found"
    assert rows(servers.db) == before
    assert servers.payments() == [f"5 {PAYEE}"]


def test_with_the_default_lease_deciding_and_stopping_do_not_wait_for_it(tmp_path: Path) -> None:
    """Approve, Reject, Stop and a new message on a waiting call, with the server's default
    lease_ttl: the server must not wait for a lease it holds itself (it did, then answered
    500 with nothing decided once the 30 s wait ran out; a short --lease-ttl hid it)."""
    found = Servers(str(tmp_path / "lovia.db"), tmp_path / "paid.txt", lease_ttl=None)
    os.environ["LOVIA_TEST_PAID"] = str(found.ledger)
    try:
        base = found.start()
        call_id = park(base, "c1")["approvals"][0]["call_id"]
        approved = decide(base, "c1", call_id, True)
        assert approved.status_code == 200, approved.text
        assert "paid 5" in last_answer(settled(base, "c1"))
        assert found.payments() == [f"5 {PAYEE}"]
        call_id = park(base, "c2")["approvals"][0]["call_id"]
        assert decide(base, "c2", call_id, False, "no").status_code == 200
        assert last_answer(settled(base, "c2")).endswith("Reason: no")
        run_id = park(base, "c3")["run_id"]
        stopped = httpx.post(f"{base}/api/chat/cancel?session_id=c3", timeout=60)
        assert stopped.status_code == 200, stopped.text
        assert snapshot(found.db, run_id) is None
        first = park(base, "c4")["run_id"]
        assert park(base, "c4")["run_id"] != first  # it asks again: a new run parks
        assert snapshot(found.db, first) is None
        assert found.payments() == [f"5 {PAYEE}"]
    finally:
        found.stop()
        os.environ.pop("LOVIA_TEST_PAID", None)


def test_reject_with_a_reason_shows_the_model_its_refusal(servers: Servers) -> None:
    base = servers.start()
    call_id = park(base, "c1")["approvals"][0]["call_id"]
    assert decide(base, "c1", call_id, False, "too expensive").status_code == 200
    assert last_answer(settled(base, "c1")) == (
        "after the payment: Tool pay was not approved. Reason: too expensive"
    )
    assert servers.payments() == []


def test_stop_rejects_waiting_calls_and_the_chat_goes_on(servers: Servers) -> None:
    base = servers.start()
    pending = park(base, "c1")
    run_id, call_id = pending["run_id"], pending["approvals"][0]["call_id"]
    stopped = httpx.post(f"{base}/api/chat/cancel?session_id=c1")
    assert stopped.json() == {"ok": True, "stopped": run_id}
    [(seg_run, meta, entries)] = stored(servers.db, "c1")
    assert seg_run == run_id and meta["ended"] == "stopped" and set(meta) == {"ended", "timing"}
    assert [e.type for e in entries] == ["input", "tool_call", "tool_result"]
    assert entries[2].output == "Tool pay was not approved. Reason: stopped"
    assert snapshot(servers.db, run_id) is None  # no pending approval left behind
    assert httpx.get(f"{base}/api/runs/resumable").json() == []
    late = decide(base, "c1", call_id, True)
    assert late.status_code == 404
    # not deadlocked: the next message gets its own answer (which asks again)
    again = park(base, "c1")
    assert again["run_id"] != run_id
    assert servers.payments() == []


def test_a_new_message_while_calls_wait_refuses_them_and_keeps_the_chat_whole(
    servers: Servers,
) -> None:
    base = servers.start()
    first = park(base, "c1")
    second = park(base, "c1")  # the user wrote again instead of deciding
    assert second["run_id"] != first["run_id"]
    [(_, meta, entries)] = stored(servers.db, "c1")
    assert meta["ended"] == "interrupted" and set(meta) == {"ended", "timing"}
    assert [e.type for e in entries] == ["input", "tool_call", "tool_result"]
    assert "not approved" in entries[2].output
    assert snapshot(servers.db, first["run_id"]) is None


def test_a_decision_from_another_origin_is_refused_before_anything_is_written(
    servers: Servers,
) -> None:
    base = servers.start()
    call_id = park(base, "c1")["approvals"][0]["call_id"]
    before = rows(servers.db)
    body = {"session_id": "c1", "call_id": call_id, "decision": "approve"}
    forged = httpx.post(
        f"{base}/api/chat/approve", json=body, headers={"Origin": "http://evil.example"}
    )
    assert forged.status_code == 403
    for loose in ("yes please", "yes", 1, True, "APPROVE"):  # only "approve" approves
        bad = httpx.post(f"{base}/api/chat/approve", json={**body, "decision": loose})
        assert bad.status_code == 422, loose
    assert rows(servers.db) == before
    assert servers.payments() == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_servers_deciding_at_once_one_wins_the_other_changes_nothing(
    backend: str, tmp_path: Path
) -> None:
    """Opposite decisions for one call on two servers at the same moment: one is taken and
    its run finishes; the other gets 409; the tool ran at most once, as the winner said."""
    prefix = None
    db = str(tmp_path / "lovia.db")
    if backend == "postgres":
        db, prefix = postgres_dsn(), fresh_prefix()
    found = Servers(db, tmp_path / "paid.txt", prefix)
    try:
        a, b = found.start(), found.start()
        approved = 0
        for trial in range(3):
            chat = f"race{trial}"
            call_id = park(a, chat)["approvals"][0]["call_id"]

            async def both(chat: str = chat, call_id: str = call_id) -> list[httpx.Response]:
                async with httpx.AsyncClient(timeout=30) as client:
                    url = "/api/chat/approve"
                    body = {"session_id": chat, "call_id": call_id}
                    return list(
                        await asyncio.gather(
                            client.post(a + url, json={**body, "decision": "approve"}),
                            client.post(b + url, json={**body, "decision": "deny"}),
                        )
                    )

            ok_a, ok_b = asyncio.run(both())
            codes = sorted([ok_a.status_code, ok_b.status_code])
            # the other server's decision came while the chat was held (409) or after the
            # call stopped waiting (404)
            assert codes in ([200, 404], [200, 409]), (ok_a.text, ok_b.text)
            winner = ok_a if ok_a.status_code == 200 else ok_b
            chat_now = settled(a if winner is ok_a else b, chat)
            assert chat_now["pending"] is None
            answer = last_answer(chat_now)
            approved += winner is ok_a
            expected = "paid 5 to" if winner is ok_a else "not approved"
            assert expected in answer
            loser = ok_b if winner is ok_a else ok_a
            assert loser.json()["detail"]["code"] in (
                "run_active",
                "approval_conflict",
                "approval_not_found",
            )
            assert len(found.payments()) == approved  # the approved call ran once, no other
    finally:
        found.stop()
        if prefix is not None:
            drop_prefix(postgres_dsn(), prefix)


async def test_without_a_page_a_call_that_needs_approval_is_refused_not_parked(
    tmp_path: Path,
) -> None:
    """``lovia chat`` has no page to decide on: its supervisor leaves the call to the
    agent's handler, and without one the call is refused (fail closed), the run completes."""
    from lovia import InMemoryCheckpointer, InMemorySession
    from lovia.chats import ChatBook, RunSupervisor

    from .apps import paying

    os.environ["LOVIA_TEST_PAID"] = str(tmp_path / "paid.txt")
    try:
        book = ChatBook(InMemorySession(), InMemoryCheckpointer())
        sup = RunSupervisor(paying, book, probe=False, park_approvals=False)

        async def prepare() -> str:
            return "pay bob"

        run = await sup.begin("t", prepare)
        await run.finished.wait()
        assert run.events[-1]["type"] == "run_completed"
        assert run.events[-1]["result"]["output"] == "after the payment: Tool pay was not approved."
        assert await book.pending_run("t") is None
        assert not (tmp_path / "paid.txt").exists()
    finally:
        os.environ.pop("LOVIA_TEST_PAID", None)
