"""Issue 14, finding 7, as it happened: two worker processes submit one run; the second one's
wall clock is an hour ahead (an NTP step, a VM resumed with a stale clock). It must neither
take the live run over nor run its tool a second time; once the first worker finishes it
replays the stored answer. On a SQLite file and on PostgreSQL, through ``Runner.run``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .pg import drop_prefix, fresh_prefix, postgres_dsn

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent(
    """
    import asyncio, json, os, sys, time
    kind, where, prefix, shift, on_busy, ledger, gate = sys.argv[1:8]
    real, real_ns = time.time, time.time_ns
    time.time = lambda: real() + float(shift)  # this process's wall clock is off
    time.time_ns = lambda: real_ns() + int(float(shift) * 1e9)

    from lovia import Agent, CheckpointOptions, RunBusy, Runner, tool
    from lovia.testing import ScriptedProvider, call, text

    def note(what):
        with open(ledger, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {what}\\n")

    @tool
    async def charge() -> str:
        \"\"\"Charge the card (waits while the gate file exists).\"\"\"
        note("charge started")
        while os.path.exists(gate):
            await asyncio.sleep(0.05)
        note("charge ended")
        return "charged 30"

    async def main():
        if kind == "sqlite":
            from lovia.stores import SQLiteCheckpointer
            cp = SQLiteCheckpointer(where, wal=True)
        else:
            from lovia.stores import PostgresCheckpointer
            cp = PostgresCheckpointer(where, table_prefix=prefix)
        model = ScriptedProvider([call("charge", {}, call_id="c1"), text("paid")])
        agent = Agent("shop", model=model, tools=[charge])
        options = CheckpointOptions(cp, "order-7", lease_ttl=3.0, on_busy=on_busy)
        async with cp:
            try:
                result = await Runner.run(agent, "pay", checkpoint=options)
            except RunBusy as exc:
                print(json.dumps({"busy": exc.message}))
                return
            print(json.dumps({"output": result.output, "replayed": result.replayed}))

    asyncio.run(main())
    """
)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "runs.db"), ""
        return
    dsn, prefix = postgres_dsn(), fresh_prefix()
    try:
        yield "postgres", dsn, prefix
    finally:
        drop_prefix(dsn, prefix)


def _worker(
    store: tuple[str, str, str], shift: float, on_busy: str, tmp_path: Path
) -> subprocess.Popen[str]:
    args = [*store, str(shift), on_busy, str(tmp_path / "ledger"), str(tmp_path / "gate")]
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ledger(tmp_path: Path) -> list[str]:
    path = tmp_path / "ledger"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _answer(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    found: dict[str, object] = json.loads(out)
    return found


def test_a_worker_an_hour_ahead_neither_takes_the_run_nor_charges_again(
    store: tuple[str, str, str], tmp_path: Path
) -> None:
    (tmp_path / "gate").touch()
    first = _worker(store, 0.0, "wait", tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not _ledger(tmp_path):  # the first worker is inside the tool, lease held
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first worker never reached its tool"
            time.sleep(0.05)
        time.sleep(4.0)  # longer than lease_ttl: only the heartbeat keeps the lease now

        ahead = _worker(store, 3600.0, "fail", tmp_path)
        while ahead.poll() is None:
            if len(_ledger(tmp_path)) > 1:
                ahead.kill()
                pytest.fail(f"the worker an hour ahead took the run over: {_ledger(tmp_path)}")
            time.sleep(0.05)
        refused = _answer(ahead)
        assert "busy" in refused, refused
        waiting = _worker(store, 3600.0, "wait", tmp_path)
        (tmp_path / "gate").unlink()  # the first worker's tool returns
        assert _answer(first) == {"output": "paid", "replayed": False}
        assert _answer(waiting) == {"output": "paid", "replayed": True}
    finally:
        first.kill()
        first.communicate()
    pid = str(first.pid)
    assert _ledger(tmp_path) == [f"{pid} charge started", f"{pid} charge ended"]
