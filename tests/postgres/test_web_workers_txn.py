"""``lovia web --workers``: what must commit together does. A person's decision on a parked
call (written into the run's checkpoint head) and the job that resumes the run are one
PostgreSQL transaction: a web server killed (SIGKILL) between the two statements leaves
neither, and the decision taken again on another server leaves both, and the tool runs once.
Issue 34."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

pytest.importorskip("procrastinate")
pytest.importorskip("lovia.web")

from lovia.approvals import pending_approvals
from lovia.stores.postgres import PostgresCheckpointer

from .test_web_workers import APP, Procs, _events, _serve, _wait_up
from .test_web_workers import procs as procs  # the fixture
from .web_queue_app import ANSWER

# The fault: a job waits in its INSERT (a resumption's: 'true'; a new run's: 'false'),
# after the UPDATE before it in the same transaction (the decision into the run's head, the
# schedule's move to its next time), until the test has killed the web server that writes.
_HOLD = """
CREATE FUNCTION lovia_test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(20); RETURN NEW; END $$;
CREATE TRIGGER lovia_test_hold BEFORE INSERT ON procrastinate_jobs FOR EACH ROW
WHEN (NEW.args->>'resume_only' = '{resume}') EXECUTE FUNCTION lovia_test_hold();
"""

_RELEASE = "DROP TRIGGER lovia_test_hold ON procrastinate_jobs; DROP FUNCTION lovia_test_hold()"


def _resume_jobs(dsn: str, run_id: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE args->>'run_id' = %s "
            "AND args->>'resume_only' = 'true'",
            (run_id,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _decisions(dsn: str, run_id: str) -> list[str | None]:
    async def read() -> list[str | None]:
        async with PostgresCheckpointer(dsn) as checkpointer:
            return [p.decision for p in await pending_approvals(checkpointer, run_id)]

    return asyncio.run(read())


def _held_backend(dsn: str) -> int | None:
    """The backend whose transaction waits in the held INSERT of a job (a resumption's is
    deferred through procrastinate's function, a new run's inserted with its row)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' "
            "AND state = 'active' AND (query LIKE '%procrastinate_defer_jobs%' "
            "OR query LIKE '%INTO procrastinate_jobs%')"
        ).fetchone()
    return None if row is None else int(row[0])


def _wait_held(procs: Procs) -> int:
    for _ in range(300):
        held = _held_backend(procs.dsn)
        if held is not None:
            return held
        time.sleep(0.05)
    raise AssertionError("no job was held\n" + procs.logs())


def _end_backend(dsn: str, pid: int) -> None:
    """End the held session as PostgreSQL does once it notices its client is gone, then
    take the fault away."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):
            if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                break
            time.sleep(0.05)
        conn.execute(_RELEASE)


def _follow(client: httpx.Client, chat: str) -> tuple[str, Any] | None:
    """The end of the chat's run, followed by reconnecting to it (409 while a dead server's
    claim on the chat stands)."""
    for _ in range(100):
        with client.stream("POST", "/api/chat/reconnect", params={"session_id": chat}) as r:
            if r.status_code != 200:
                r.read()
                time.sleep(0.2)
                continue
            for name, data in _events(r.iter_lines()):
                if name in ("done", "error"):
                    return name, data
            return None
    return None


def _park(client: httpx.Client, chat: str) -> dict[str, Any]:
    """Send the chat's message; the ``approval_required`` event its run parks with."""
    body = {"message": "pay bob", "session_id": chat}
    with client.stream("POST", "/api/chat/stream", json=body) as r:
        for name, data in _events(r.iter_lines()):
            if name == "approval_required":
                return dict(data)
            if name in ("done", "error"):
                break
    raise AssertionError("the run did not park for an approval")


def test_a_web_server_killed_between_a_decision_and_its_job_leaves_neither(
    procs: Procs, tmp_path: Path
) -> None:
    ledger = tmp_path / "paid.txt"
    procs.env["LOVIA_TEST_PAID"] = str(ledger)
    web_a, port_a = _serve(procs, "tests.web.apps:paying")
    procs.spawn("worker-1", "worker", "--app", "tests.web.apps:paying", "--db", procs.dsn)
    chat = uuid.uuid4().hex
    with httpx.Client(base_url=f"http://127.0.0.1:{port_a}", timeout=60) as client:
        _wait_up(client, procs)
        asked = _park(client, chat)
        decision = {
            "session_id": chat,
            "call_id": asked["id"],
            "decision": "approve",
            "run_id": asked["run_id"],
            "digest": asked["digest"],
        }
        run_id = str(asked["run_id"])
        with psycopg.connect(procs.dsn, autocommit=True) as conn:
            conn.execute(_HOLD.format(resume="true"))

        def approve() -> None:
            try:
                client.post("/api/chat/approve", json=decision)
            except httpx.TransportError:
                pass  # the server is killed while it answers

        asking = threading.Thread(target=approve)
        asking.start()
        held = _wait_held(procs)
        # the decision's UPDATE ran in the held transaction (not visible outside it)
        assert _decisions(procs.dsn, run_id) == [None]
        web_a.send_signal(signal.SIGKILL)
        web_a.wait()
        asking.join(timeout=30)
    _end_backend(procs.dsn, held)

    # neither the decision nor its job
    assert _decisions(procs.dsn, run_id) == [None]
    assert _resume_jobs(procs.dsn, run_id) == 0
    assert not ledger.exists()

    # the decision again, on another server: both, and the run goes on to its answer
    _, port_b = _serve(procs, "tests.web.apps:paying")
    with httpx.Client(base_url=f"http://127.0.0.1:{port_b}", timeout=60) as client:
        _wait_up(client, procs)
        for _ in range(100):  # the dead server's claim on the chat frees itself
            decided = client.post("/api/chat/approve", json=decision)
            if decided.status_code != 409:
                break
            time.sleep(0.2)
        assert decided.status_code == 200, (decided.text, procs.logs())
        assert _resume_jobs(procs.dsn, run_id) == 1  # committed with the decision
        outcome = _follow(client, chat)
        entries = client.get(f"/api/sessions/{chat}").json()["entries"]
    assert entries[-1]["role"] == "assistant", (outcome, entries, procs.logs())
    assert str(entries[-1]["content"]).startswith("after the payment: paid 5")
    assert ledger.read_text().count("\n") == 1  # paid once, by the worker


def _schedule(dsn: str, schedule_id: str) -> tuple[int, float, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT fire_count, next_fire, active FROM lovia_chat_schedules WHERE id = %s",
            (schedule_id,),
        ).fetchone()
    assert row is not None
    return int(row[0]), float(row[1]), int(row[2])


def _queued_runs(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT session_id FROM lovia_queue_runs").fetchall()
    return [str(r[0]) for r in rows]


def test_a_web_server_killed_as_a_schedule_fires_leaves_it_due_and_unqueued(
    procs: Procs,
) -> None:
    web_a, port_a = _serve(procs, f"{APP}:agent")
    procs.worker("worker-1")
    with httpx.Client(base_url=f"http://127.0.0.1:{port_a}", timeout=60) as client:
        _wait_up(client, procs)
        with psycopg.connect(procs.dsn, autocommit=True) as conn:
            conn.execute(_HOLD.format(resume="false"))
        due = time.time() + 1
        spec = {"input": "scheduled", "trigger_kind": "at", "trigger_expr": str(due)}
        schedule = client.post("/api/schedules", json=spec).json()
        held = _wait_held(procs)
        assert _schedule(procs.dsn, schedule["id"]) == (0, due, 1)  # the move is uncommitted
        web_a.send_signal(signal.SIGKILL)
        web_a.wait()
    _end_backend(procs.dsn, held)

    # neither the schedule's move nor its run's job
    assert _schedule(procs.dsn, schedule["id"]) == (0, due, 1)
    assert _queued_runs(procs.dsn) == []

    # another server fires it: both, and a worker answers in the fire's chat
    _, port_b = _serve(procs, f"{APP}:agent")
    with httpx.Client(base_url=f"http://127.0.0.1:{port_b}", timeout=60) as client:
        _wait_up(client, procs)
        for _ in range(300):
            chats = _queued_runs(procs.dsn)
            if chats:
                entries = client.get(f"/api/sessions/{chats[0]}").json().get("entries") or []
                if entries and entries[-1]["role"] == "assistant" and entries[-1]["content"]:
                    break
            time.sleep(0.1)
        assert entries[-1]["content"] == ANSWER, (entries, procs.logs())
    fired, _, active = _schedule(procs.dsn, schedule["id"])
    assert (fired, active) == (1, 0)  # an `at` schedule: fired once, then done
    assert len(_queued_runs(procs.dsn)) == 1
