"""Exactly-once charges with the run checkpointed in PostgreSQL: workers SIGKILLed at random
points (a fixed seed), each next worker taking the run's lease over; every logical charge is
made once (issue 32; the full count is ``benchmarks/exactly_once.py --dsn``)."""

from __future__ import annotations

import random
from pathlib import Path

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from .payments import EXPECTED, payment_server, trial


def test_charges_survive_random_kills_exactly_once_on_postgres(tmp_path: Path) -> None:
    dsn = postgres_dsn()
    rng = random.Random(27)
    kills = 0
    with payment_server() as (url, ledger):
        for n in range(3):
            prefix = fresh_prefix()
            try:
                got = trial(
                    tmp_path / f"t{n}", url, ledger, rng, store=("--dsn", dsn, "--prefix", prefix)
                )
            finally:
                drop_prefix(dsn, prefix)
            assert got["output"] == "paid"
            assert got["cents"] == EXPECTED, got  # no charge lost, none made twice
            assert got["keys"] == 3
            kills += got["kills"]
    assert kills >= 3  # every trial lost at least one worker
