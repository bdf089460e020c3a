"""The whole fault matrix of the PostgreSQL queue; prints JSON.

    python benchmarks/queue_faults.py [--runs 60] [--workers 2,4] [--faults 3] [--seeds 1,2,3]

Each cell runs ``tests/postgres/queue_fleet.py``'s scenario (``lovia worker`` processes, runs
of two tool calls, faults hitting them inside tools: SIGKILL, ``pg_terminate_backend``, a
resetting TCP proxy) in a schema of its own, checks that no run was lost, none ran twice and
no saved tool result was computed again, and reports how long it took and what was redone.
The tests run a fixed-seed subset of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import traceback
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.postgres.queue_fleet import KINDS, run_scenario  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default=os.environ.get("LOVIA_TEST_POSTGRES_DSN", ""))
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--workers", default="2,4")
    ap.add_argument("--faults", type=int, default=3)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--quick", action="store_true", help="a tiny run that only shows it works")
    args = ap.parse_args()
    if not args.dsn:
        if args.quick:
            print(json.dumps({"skipped": "no --dsn or LOVIA_TEST_POSTGRES_DSN"}))
            return
        sys.exit("set --dsn or LOVIA_TEST_POSTGRES_DSN")
    if args.quick:  # one cell: a few runs, one worker killed once
        args.runs, args.workers, args.faults, args.seeds, args.kinds = 6, "2", 1, "1", KINDS[0]
    import logging

    import psycopg

    logging.disable(logging.WARNING)
    cells: list[dict[str, Any]] = []
    for kind in args.kinds.split(","):
        for workers in [int(w) for w in args.workers.split(",")]:
            for seed in [int(s) for s in args.seeds.split(",")]:
                schema = f"qf{uuid.uuid4().hex[:10]}"
                with psycopg.connect(args.dsn, autocommit=True) as conn:
                    conn.execute(f'CREATE SCHEMA "{schema}"')
                sep = "&" if "?" in args.dsn else "?"
                dsn = f"{args.dsn}{sep}options={quote(f'-csearch_path={schema}')}"
                cell: dict[str, Any] = {"kind": kind, "workers": workers, "seed": seed}
                try:
                    with tempfile.TemporaryDirectory() as logs:
                        cell |= asyncio.run(
                            run_scenario(
                                dsn,
                                Path(logs),
                                kind=kind,
                                runs=args.runs,
                                workers=workers,
                                faults=args.faults,
                                seed=seed,
                                deadline_s=300.0,
                            )
                        )
                    cell["ok"] = True
                except Exception as exc:  # a failed check is a result of the matrix
                    cell |= {"ok": False, "error": "".join(traceback.format_exception(exc))[-800:]}
                finally:
                    with psycopg.connect(args.dsn, autocommit=True) as conn:
                        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
                print(json.dumps(cell), file=sys.stderr, flush=True)
                cells.append(cell)
    print(json.dumps({"cells": cells, "all_ok": all(c["ok"] for c in cells)}, indent=2))


if __name__ == "__main__":
    main()
