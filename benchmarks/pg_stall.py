"""How long ``asyncio.wait_for(Runner.run(...), timeout)`` takes to return when the link to
PostgreSQL stops forwarding (no reset) mid-run, through the loopback proxy of the tests.

Prints JSON: per trial the seconds until the run returned, and ``over_timeout`` (returned
after minus the wait_for timeout), for the default deadlines and for short ones.

    python benchmarks/pg_stall.py --dsn postgresql://postgres@127.0.0.1:5432/test --trials 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.postgres.pg_proxy import PgProxy  # noqa: E402
from tests.postgres.test_pg_stalls import SHORT, _agent  # noqa: E402
from tests.stores.pg import drop_prefix, fresh_prefix  # noqa: E402

from lovia import CheckpointOptions, PostgresCheckpointer, Runner  # noqa: E402
from lovia.stores.postgres import PgDeadlines  # noqa: E402


async def trial(dsn: str, deadlines: PgDeadlines, timeout: float) -> float:
    prefix = fresh_prefix()
    try:
        async with PgProxy(dsn) as proxy:
            async with PostgresCheckpointer(
                proxy.dsn, table_prefix=prefix, deadlines=deadlines
            ) as cp:
                run = Runner.run(
                    _agent(proxy, "stall"), "where is 7?", checkpoint=CheckpointOptions(cp, "r1")
                )
                start = time.monotonic()
                try:
                    await asyncio.wait_for(run, timeout)
                except (asyncio.TimeoutError, Exception):
                    pass
                return time.monotonic() - start
    finally:
        drop_prefix(dsn, prefix)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", default=os.environ.get("LOVIA_TEST_POSTGRES_DSN", ""))
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--quick", action="store_true", help="a tiny run that only shows it works")
    args = ap.parse_args()
    if not args.dsn:
        if args.quick:
            print(json.dumps({"skipped": "no --dsn or LOVIA_TEST_POSTGRES_DSN"}))
            return
        sys.exit("set --dsn or LOVIA_TEST_POSTGRES_DSN")
    kinds = (("short", SHORT),) if args.quick else (("short", SHORT), ("default", PgDeadlines()))
    if args.quick:
        args.trials = 1
    out = {}
    for name, deadlines in kinds:
        took = [asyncio.run(trial(args.dsn, deadlines, args.timeout)) for _ in range(args.trials)]
        out[name] = {
            "returned_after_s": [round(t, 2) for t in took],
            "over_timeout_s": round(max(took) - args.timeout, 2),
        }
    print(json.dumps({"wait_for_timeout_s": args.timeout, **out}))


if __name__ == "__main__":
    main()
