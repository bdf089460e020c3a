"""``lovia web --workers``: the web server queues each chat's run on PostgreSQL and a
separate ``lovia worker`` process answers it; the chat's stream follows the run from the
database. A worker killed (SIGKILL) inside the run's tool is replaced, the new worker
finishes the run, and the stream that was open all along gets the answer. A web server
killed mid-run leaves the run to its worker, and another server's reconnect follows it to
the answer. Stop on the page cancels the run on its worker; an approval parks the run on the
worker and the decision queues its resumption; a schedule's run goes to a worker. Issue 34
(C4)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("procrastinate")
pytest.importorskip("lovia.web")

from .web_queue_app import ANSWER

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.postgres.web_queue_app"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Procs:
    def __init__(self, dsn: str, tmp: Path) -> None:
        self.dsn, self.tmp = dsn, tmp
        self.tool_log = tmp / "tools.log"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "LOVIA_TEST_TOOL_LOG": str(self.tool_log),
            "LOVIA_TEST_STEP_SECONDS": "1.5",
        }

    def spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        out = (self.tmp / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "lovia", *args],
            cwd=self.tmp,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        out.close()
        self.procs.append(proc)
        return proc

    def worker(self, name: str) -> subprocess.Popen[bytes]:
        return self.spawn(name, "worker", "--app", f"{APP}:queue", "--db", self.dsn)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.tmp.glob("*.log")
        )

    def tool_lines(self) -> list[list[str]]:
        if not self.tool_log.exists():
            return []
        return [line.split() for line in self.tool_log.read_text().splitlines()]

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def procs(queue_dsn: str, tmp_path: Path) -> Iterator[Procs]:
    fleet = Procs(queue_dsn, tmp_path)
    try:
        yield fleet
    finally:
        fleet.stop()


def _wait_up(client: httpx.Client, procs: Procs) -> None:
    for _ in range(300):
        try:
            if client.get("/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("the web server did not start\n" + procs.logs())


def _events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: ") and name is not None:
            yield name, json.loads(line[len("data: ") :])
            name = None


def test_a_chat_is_answered_by_a_worker_process_and_survives_its_sigkill(procs: Procs) -> None:
    port = _free_port()
    web = procs.spawn(
        "web",
        "web",
        "--app",
        f"{APP}:agent",
        "--db",
        procs.dsn,
        "--workers",
        "--port",
        str(port),
    )
    first = procs.worker("worker-1")
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        _wait_up(client, procs)

        # a chat sent over HTTP: queued by the web server, answered by the worker
        chat = uuid.uuid4().hex
        seen: list[tuple[str, Any]] = []
        body = {"message": "hello", "session_id": chat}
        with client.stream("POST", "/api/chat/stream", json=body) as response:
            assert response.status_code == 200, procs.logs()
            for name, data in _events(response.iter_lines()):
                seen.append((name, data))
                if name in ("done", "error"):
                    break
        names = [n for n, _ in seen]
        assert "done" in names, (seen, procs.logs())
        assert "tool_call" in names and "tool_result" in names
        assert seen[-1][1]["output"] == ANSWER
        pids = {int(line[1]) for line in procs.tool_lines()}
        assert pids == {first.pid}  # the worker ran the tool, not the web server
        assert web.pid not in pids

        # a second chat: its worker is killed inside the tool; another worker finishes it
        chat2 = uuid.uuid4().hex
        body = {"message": "again", "session_id": chat2}
        second = None
        outcome: tuple[str, Any] | None = None
        with client.stream("POST", "/api/chat/stream", json=body) as response:
            assert response.status_code == 200
            run_id = response.headers["x-lovia-run-id"]
            for name, data in _events(response.iter_lines()):
                if name == "tool_call" and second is None:
                    for _ in range(200):  # the worker is inside the tool
                        if any(
                            line[0] == "start" and line[2] == run_id for line in procs.tool_lines()
                        ):
                            break
                        time.sleep(0.05)
                    first.send_signal(signal.SIGKILL)
                    first.wait()
                    second = procs.worker("worker-2")
                if name in ("done", "error"):
                    outcome = (name, data)
                    break
        assert second is not None, procs.logs()
        assert outcome is not None and outcome[0] == "done", (outcome, procs.logs())
        assert outcome[1]["output"] == ANSWER
        lines = [line for line in procs.tool_lines() if line[2] == run_id]
        ended = [line for line in lines if line[0] == "end"]
        assert [int(line[1]) for line in ended] == [second.pid]  # finished by the new worker
        assert all(int(line[1]) in (first.pid, second.pid) for line in lines)

        # the chat holds one answer, read back through the web server
        chat_view = client.get(f"/api/sessions/{chat2}").json()
        roles = [m["role"] for m in chat_view["entries"]]
        assert roles.count("user") == 1 and roles[-1] == "assistant", chat_view

        # a schedule fired by the web server: its run goes to a worker too
        spec = {"input": "scheduled", "trigger_kind": "every", "trigger_expr": "3600"}
        schedule = client.post("/api/schedules", json=spec).json()
        fired = client.post(f"/api/schedules/{schedule['id']}/run")
        assert fired.status_code == 200, fired.text
        chat3 = fired.json()["session_id"]
        for _ in range(600):
            entries = client.get(f"/api/sessions/{chat3}").json().get("entries") or []
            if entries and entries[-1]["role"] == "assistant" and entries[-1].get("content"):
                break
            time.sleep(0.1)
        assert entries[-1]["content"] == ANSWER, (entries, procs.logs())
        ran = {int(line[1]) for line in procs.tool_lines() if line[0] == "end"}
        assert web.pid not in ran and second.pid in ran
        assert web.poll() is None


def _serve(procs: Procs, app: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    args = ["web", "--app", app, "--db", procs.dsn, "--workers", "--port", str(port)]
    return procs.spawn("web", *args), port


def test_stop_on_the_page_cancels_the_run_on_its_worker(procs: Procs) -> None:
    procs.env["LOVIA_TEST_STEP_SECONDS"] = "30"
    _, port = _serve(procs, f"{APP}:agent")
    procs.worker("worker-1")
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        _wait_up(client, procs)
        chat = uuid.uuid4().hex
        outcome = None
        body = {"message": "hello", "session_id": chat}
        with client.stream("POST", "/api/chat/stream", json=body) as response:
            run_id = response.headers["x-lovia-run-id"]
            for name, data in _events(response.iter_lines()):
                if name == "tool_call":
                    for _ in range(200):
                        if any(line[2] == run_id for line in procs.tool_lines()):
                            break
                        time.sleep(0.05)
                    stopped = client.post("/api/chat/cancel", params={"session_id": chat})
                    assert stopped.json() == {"ok": True, "stopped": run_id}, stopped.text
                if name in ("done", "error"):
                    outcome = (name, data)
                    break
        assert outcome is not None and outcome[0] == "error", (outcome, procs.logs())
        assert outcome[1]["code"] == "cancelled"
        # the tool was interrupted on the worker: it never ended
        assert [line[0] for line in procs.tool_lines() if line[2] == run_id] == ["start"]


def test_an_approval_parks_on_a_worker_and_the_decision_resumes_it_on_one(
    procs: Procs, tmp_path: Path
) -> None:
    ledger = tmp_path / "paid.txt"
    procs.env["LOVIA_TEST_PAID"] = str(ledger)
    _, port = _serve(procs, "tests.web.apps:paying")
    procs.spawn("worker-1", "worker", "--app", "tests.web.apps:paying", "--db", procs.dsn)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        _wait_up(client, procs)
        chat = uuid.uuid4().hex
        names: list[str] = []
        outcome = None
        body = {"message": "pay bob", "session_id": chat}
        with client.stream("POST", "/api/chat/stream", json=body) as response:
            for name, data in _events(response.iter_lines()):
                names.append(name)
                if name == "approval_required":
                    assert not ledger.exists()  # nothing paid before the decision
                    decision = {
                        "session_id": chat,
                        "call_id": data["id"],
                        "decision": "approve",
                        "run_id": data["run_id"],
                        "digest": data["digest"],
                    }
                    decided = client.post("/api/chat/approve", json=decision)
                    assert decided.status_code == 200, (decided.text, procs.logs())
                if name in ("done", "error"):
                    outcome = (name, data)
                    break
        assert outcome is not None and outcome[0] == "done", (names, outcome, procs.logs())
        assert str(outcome[1]["output"]).startswith("after the payment: paid 5")
        assert ledger.read_text().count("\n") == 1  # paid once, by the worker


def test_a_web_server_killed_mid_run_leaves_the_run_to_its_worker_and_another_server_follows(
    procs: Procs,
) -> None:
    # the run outlives server A and B's start, on a loaded machine too (B took over 10 s)
    procs.env["LOVIA_TEST_STEP_SECONDS"] = "20"
    web_a, port_a = _serve(procs, f"{APP}:agent")
    procs.worker("worker-1")
    chat = uuid.uuid4().hex
    with httpx.Client(base_url=f"http://127.0.0.1:{port_a}", timeout=60) as client:
        _wait_up(client, procs)
        body = {"message": "hello", "session_id": chat}
        with client.stream("POST", "/api/chat/stream", json=body) as response:
            run_id = response.headers["x-lovia-run-id"]
            for name, _ in _events(response.iter_lines()):
                if name == "tool_call":
                    web_a.send_signal(signal.SIGKILL)
                    web_a.wait()
                    break
    _, port_b = _serve(procs, f"{APP}:agent")
    outcome = None
    with httpx.Client(base_url=f"http://127.0.0.1:{port_b}", timeout=60) as client:
        _wait_up(client, procs)
        for _ in range(100):  # the dead server's claim on the chat frees itself
            with client.stream(
                "POST", "/api/chat/reconnect", params={"session_id": chat}
            ) as response:
                if response.status_code != 200:
                    response.read()
                    time.sleep(0.2)  # 409 while the dead server's claim stands
                    continue
                for name, data in _events(response.iter_lines()):
                    if name in ("done", "error"):
                        outcome = (name, data)
                        break
                break
        entries = client.get(f"/api/sessions/{chat}").json()["entries"]
    assert outcome is not None and outcome[0] == "done", (outcome, procs.logs())
    assert entries[-1]["role"] == "assistant" and entries[-1]["content"] == ANSWER
    ends = [line for line in procs.tool_lines() if line[0] == "end" and line[2] == run_id]
    assert len(ends) == 1  # the worker ran the tool once, unaffected by the server's death
