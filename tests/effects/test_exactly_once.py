"""Every logical charge made exactly once through a payment server that honours
``Idempotency-Key``, with workers SIGKILLed at random points (issue 32; the full count is
``benchmarks/exactly_once.py``)."""

from __future__ import annotations

import random
from pathlib import Path

from .payments import EXPECTED, payment_server, trial


def test_charges_survive_random_kills_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(32)
    kills = replays = 0
    with payment_server() as (url, ledger):
        for n in range(4):
            got = trial(tmp_path / f"t{n}", url, ledger, rng)
            assert got["output"] == "paid"
            assert got["cents"] == EXPECTED, got  # no charge lost, none made twice
            assert got["keys"] == 3
            kills += got["kills"]
            replays += got["replays"]
    assert kills >= 4  # every trial lost at least one worker
