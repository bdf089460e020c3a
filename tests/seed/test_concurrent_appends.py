"""Several processes appending to one session at once (S4, S5, S12): every run is stored
once, whole and unchanged, and a run id appended by all of them is stored once."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from .appender import run_entries
from .conftest import ROOT, Store

WORKERS, RUNS = 4, 12


async def test_processes_appending_to_one_session_store_every_run_once_and_whole(
    store: Store,
) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.seed.appender",
            json.dumps(store.spec),
            f"w{i}",
            str(RUNS),
            cwd=ROOT,
            env=env,
            stderr=asyncio.subprocess.PIPE,
        )
        for i in range(WORKERS)
    ]
    errors = [(await asyncio.wait_for(p.communicate(), 180))[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * WORKERS, errors

    session, cp = store.open()
    try:
        segments = await session.segments("shared-chat")
        flat = await session.load("shared-chat")
    finally:
        await session.close()
        await cp.close()
    ids = [s.run_id for s in segments]
    assert len(ids) == len(set(ids)) == WORKERS * RUNS + 1
    assert ids.count("shared") == 1
    for seg in segments:
        if seg.run_id != "shared":
            worker, n = seg.run_id.split("-")
            assert seg.entries == run_entries(worker, int(n))
    for i in range(WORKERS):  # each worker's runs are in the order it appended them
        mine = [s.run_id for s in segments if s.run_id.startswith(f"w{i}-")]
        assert mine == [f"w{i}-{n}" for n in range(RUNS)]
    assert flat == [e for s in segments for e in s.entries]
