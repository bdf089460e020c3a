"""Worker processes, faults and checks for the queue fault tests (and
``benchmarks/queue_faults.py``, which runs the whole matrix).

A scenario: ``runs`` runs (two tool calls each, a session per ten runs) go through
``workers`` ``lovia worker`` processes; while tools run, ``faults`` times one fault hits:

- ``kill9``: SIGKILL of a worker inside a tool (a replacement starts); another worker hands
  its jobs back once the run lease has expired, and the run resumes from its checkpoint;
- ``terminate``: ``pg_terminate_backend`` of every connection of the workers;
- ``reset``: the workers reach PostgreSQL through a loopback TCP proxy, which resets every
  connection it carries (RST).

Checks: every run completed once, with exactly its two tool results and one session segment;
no two workers ever drove one run at the same time; a step ran again only when an earlier
execution of it was cut or unsaved by a fault.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from lovia import (
    AssistantTextEntry,
    InputEntry,
    PostgresCheckpointer,
    PostgresSession,
    ToolCallEntry,
    ToolResultEntry,
)
from lovia.workers import AgentQueue

from .queue_app import TOOL_LOG_DDL

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("kill9", "terminate", "reset")


class ResetProxy:
    """A loopback TCP proxy to PostgreSQL that can reset every connection it carries."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.socks: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.socks += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def reset_all(self) -> int:
        """Close every carried connection with RST (SO_LINGER 0); returns how many."""
        with self.lock:
            socks, self.socks = self.socks, []
        for s in socks:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.shutdown(socket.SHUT_RD)  # wakes the pipe thread blocked reading it
                s.close()
            except OSError:
                pass
        return len(socks)

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.reset_all()


def through(dsn: str, port: int) -> str:
    """``dsn`` with its host and port replaced by the proxy's."""
    parts = urlsplit(dsn)
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0] + "@" if len(netloc) == 2 else ""
    return parts._replace(netloc=f"{user}127.0.0.1:{port}").geturl()


@dataclass
class Fleet:
    dsn: str  # the test schema's DSN (direct)
    worker_dsn: str  # what the workers connect to (direct or through the proxy)
    logs: Path
    app_name: str
    concurrency: int = 4
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    killed: dict[int, float] = field(default_factory=dict)

    def start(self) -> None:
        out = (self.logs / f"worker-{len(self.procs)}.log").open("wb")
        sep = "&" if "?" in self.worker_dsn else "?"
        cmd = [
            sys.executable,
            "-m",
            "lovia",
            "worker",
            "--app",
            "tests.postgres.queue_app:queue",
            "--db",
            f"{self.worker_dsn}{sep}application_name={self.app_name}",
            "--concurrency",
            str(self.concurrency),
            "--graceful-timeout",
            "2",
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LOVIA_QUEUE_LOG_DSN": self.dsn}
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
        out.close()
        self.procs.append(proc)

    def stop(self) -> list[int | None]:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = []
        for p in self.procs:
            try:
                # how fast is not the point (CI is loaded); a clean exit after SIGTERM is
                codes.append(p.wait(timeout=90))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait())
        return [
            c
            for pid, c in zip((p.pid for p in self.procs), codes, strict=True)
            if pid not in self.killed
        ]


def tool_rows(dsn: str) -> list[tuple[str, int, int, float, float | None]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT run_id, n, pid, started, ended FROM queue_tool_log ORDER BY id"
        ).fetchall()


def fresh_tool_pids(dsn: str, within: float) -> set[int]:
    """Workers inside a tool that started less than ``within`` seconds ago."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT DISTINCT pid FROM queue_tool_log WHERE ended IS NULL AND started > %s",
            (time.time() - within,),
        ).fetchall()
    return {r[0] for r in rows}


def completed(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM lovia_queue_runs WHERE state = 'completed'"
        ).fetchone()
    return int(row[0]) if row else 0


def inject(kind: str, fleet: Fleet, proxy: ResetProxy | None, rng: random.Random) -> bool:
    if kind == "kill9":
        busy = fresh_tool_pids(fleet.dsn, 0.1) - set(fleet.killed)
        alive = [p for p in fleet.procs if p.poll() is None and p.pid in busy]
        if not alive:
            return False
        victim = rng.choice(alive)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        fleet.killed[victim.pid] = time.time()
        fleet.start()
        return True
    if not fresh_tool_pids(fleet.dsn, 0.2):
        return False
    if kind == "terminate":
        with psycopg.connect(fleet.dsn, autocommit=True) as conn:
            hit = conn.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM "
                "pg_stat_activity WHERE application_name = %s",
                (fleet.app_name,),
            ).fetchone()
        return bool(hit and hit[0])
    assert proxy is not None
    return proxy.reset_all() > 0


async def run_scenario(
    dsn: str,
    logs: Path,
    *,
    kind: str,
    runs: int = 24,
    workers: int = 2,
    faults: int = 2,
    seed: int = 34,
    deadline_s: float = 90.0,
) -> dict[str, Any]:
    """Run one scenario and check it; returns what happened (for the benchmark)."""
    assert kind in KINDS, kind
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(TOOL_LOG_DDL)
    proxy = None
    worker_dsn = dsn
    if kind == "reset":
        parts = urlsplit(dsn)
        proxy = ResetProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
        worker_dsn = through(dsn, proxy.port)
    app_name = f"lovia-fleet-{os.getpid()}-{seed}"
    fleet = Fleet(dsn, worker_dsn, logs, app_name)
    run_ids = [f"run-{i:03d}" for i in range(runs)]
    session_of = {rid: f"user-{i % max(runs // 10, 1)}" for i, rid in enumerate(run_ids)}
    fault_times: list[float] = []
    started = time.monotonic()
    async with AgentQueue(_any_agent(), dsn) as producer:
        for rid in run_ids:
            assert await producer.submit(rid, f"do {rid}", session_id=session_of[rid])
        try:
            for _ in range(workers):
                fleet.start()
            while (done := completed(dsn)) < runs:
                assert time.monotonic() - started < deadline_s, f"{done}/{runs} runs completed"
                due = done >= (len(fault_times) + 1) * runs // (faults + 2)
                if len(fault_times) < faults and due and inject(kind, fleet, proxy, rng):
                    fault_times.append(time.time())
                await asyncio.sleep(0.05)
            elapsed = time.monotonic() - started
            states = [await producer.state(rid) for rid in run_ids]
        finally:
            codes = fleet.stop()
            if proxy is not None:
                proxy.close()
    assert len(fault_times) == faults, f"{kind}: only {len(fault_times)} faults landed"
    if codes != [0] * len(codes):
        tails = _log_tails(logs)
        raise AssertionError(f"workers did not stop cleanly: {codes}; their logs end: {tails}")
    rows = tool_rows(dsn)
    repeats = check_tool_log(rows, run_ids, fleet.killed, fault_times)
    await check_stores(dsn, session_of)
    attempts = [s["attempts"] for s in states if s is not None]
    assert all(s is not None and s["state"] == "completed" for s in states)
    return {
        "kind": kind,
        "runs": runs,
        "workers": workers,
        "faults": len(fault_times),
        "seconds": round(elapsed, 2),
        "tool_executions": len(rows),
        "steps_run_again": repeats,
        "runs_retried": sum(a > 1 for a in attempts),
    }


def _log_tails(logs: Path) -> dict[str, str]:
    """The end of each worker's log, for a failure message."""
    return {f.name: f.read_text(errors="replace")[-3000:] for f in sorted(logs.glob("*.log"))}


def _any_agent() -> Any:
    from .queue_app import queue

    return queue.agents["worker"]


def check_tool_log(
    rows: list[tuple[str, int, int, float, float | None]],
    run_ids: list[str],
    killed: dict[int, float],
    fault_times: list[float],
) -> int:
    """No overlap of two workers in one run; every step finished; a step ran again only when
    an earlier execution of it was in flight at a fault. Returns how many ran again."""
    by_run: dict[str, list[tuple[int, int, float, float]]] = {}
    for run_id, n, pid, start, end in rows:
        stop = end if end is not None else killed.get(pid, float("inf"))
        by_run.setdefault(run_id, []).append((n, pid, start, stop))
    repeats = 0
    for rid in run_ids:
        spans = by_run.get(rid, [])
        for i, (_, pid_a, start_a, end_a) in enumerate(spans):
            for _, pid_b, start_b, end_b in spans[i + 1 :]:
                assert not (pid_a != pid_b and start_a < end_b and start_b < end_a), (
                    f"{rid} driven by {pid_a} and {pid_b} at once"
                )
        for n in (1, 2):
            runs_of = [s for s in spans if s[0] == n]
            assert runs_of, f"{rid}: step {n} never ran"
            for earlier in runs_of[:-1]:
                # the later execution is legitimate only if a fault hit this one (its result
                # was never saved): in flight at a fault, or finishing just before it
                _, _, start, end = earlier
                assert any(start <= t and t <= end + 2.0 for t in fault_times), (
                    f"{rid}: step {n} ran again though no fault hit it: {runs_of}"
                )
            repeats += len(runs_of) - 1
    return repeats


async def check_stores(dsn: str, session_of: dict[str, str]) -> None:
    expected = [InputEntry, ToolCallEntry, ToolResultEntry, ToolCallEntry, ToolResultEntry]
    async with PostgresCheckpointer(dsn) as cp, PostgresSession(dsn) as session:
        for rid in session_of:
            snap = await cp.load(rid)
            assert snap is not None and snap.status == "completed"
            assert [type(e) for e in snap.entries] == [*expected, AssistantTextEntry], rid
        for sid in sorted(set(session_of.values())):
            ids = [s.run_id for s in await session.segments(sid)]
            assert sorted(ids) == sorted(r for r, s in session_of.items() if s == sid), sid
