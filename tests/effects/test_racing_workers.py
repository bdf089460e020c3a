"""Two worker processes started at once on one run (issue 32): the run's lease lets one
drive it; the other is refused (``RunBusy``) or, once the run is done, replays its result.
Either way every charge is made once, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from .payments import CHILD, EXPECTED, ROOT, payment_server


def _race(tmp: Path, url: str, store: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, str(CHILD), str(tmp / "run.db"), str(tmp / "log.jsonl"), "pay"]
    procs = [
        subprocess.Popen(
            [*command, "--url", url, *store],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_workers_racing_on_one_run_charge_once(tmp_path: Path, backend: str) -> None:
    store: tuple[str, ...] = ()
    dsn = prefix = ""
    if backend == "postgres":
        dsn, prefix = postgres_dsn(), fresh_prefix()
        store = ("--dsn", dsn, "--prefix", prefix)
    try:
        with payment_server() as (url, ledger):
            for n in range(3):
                ledger.reset()
                (tmp_path / f"r{n}").mkdir()
                if prefix:
                    drop_prefix(dsn, prefix)
                results = _race(tmp_path / f"r{n}", url, store)
                finished = [r for r in results if r.returncode == 0]
                assert finished, [r.stderr[-2000:] for r in results]
                for r in finished:
                    assert json.loads(r.stdout)["output"] == "paid"
                for r in results:
                    if r.returncode != 0:
                        assert "RunBusy" in r.stderr, r.stderr[-2000:]
                assert sorted(c["cents"] for c in ledger.charges) == EXPECTED
    finally:
        if prefix:
            drop_prefix(dsn, prefix)
