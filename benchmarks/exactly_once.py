"""Exactly-once charges under random SIGKILLs (issue 32).

    python benchmarks/exactly_once.py [--trials 500] [--seed 32] [--dsn postgresql://...]

Each trial drives one checkpointed run (SQLite; with ``--dsn``, PostgreSQL, each trial in
tables of its own prefix, dropped after) that makes three charges through a local
payment server honouring ``Idempotency-Key`` (tests/effects/payments.py): one to three worker
processes are SIGKILLed at random points (before a charge, after the server charged and
before the tool returned, after a result was saved, inside a model call), each next worker
taking the run's lease over, then one finishes. Prints JSON: trials, workers killed, charges
expected, made, lost and duplicated, and requests the server answered from a key.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.effects.payments import EXPECTED, payment_server, trial
from tests.stores.pg import drop_prefix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--dsn", help="checkpoint in this PostgreSQL database, not SQLite")
    parser.add_argument("--quick", action="store_true", help="2 trials: only shows it works")
    args = parser.parse_args()
    if args.quick:
        args.trials = 2
    rng = random.Random(args.seed)
    totals: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp, payment_server() as (url, ledger):
        for n in range(args.trials):
            prefix = f"eo{uuid.uuid4().hex[:10]}_"
            store = ("--dsn", args.dsn, "--prefix", prefix) if args.dsn else ()
            try:
                got = trial(Path(tmp) / f"t{n}", url, ledger, rng, store=store)
            finally:
                if args.dsn:
                    drop_prefix(args.dsn, prefix)
            made = Counter(got["cents"])
            expected = Counter(EXPECTED)
            totals["workers_killed"] += got["kills"]
            totals["charges_expected"] += len(EXPECTED)
            totals["charges_made"] += len(got["cents"])
            totals["charges_lost"] += sum((expected - made).values())
            totals["charges_duplicated"] += sum((made - expected).values())
            totals["answered_from_key"] += got["replays"]
            totals["wrong_output"] += got["output"] != "paid"
    store_name = "postgresql" if args.dsn else "sqlite"
    summary = {"store": store_name, "trials": args.trials, "seed": args.seed, **totals}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
