"""A web server process for the tests: ``python -m tests.web.serve --db DB --port N
[--prefix P] --app MODULE:ATTR``. Like ``lovia web``, plus a PostgreSQL table prefix so each
test has its own tables."""

from __future__ import annotations

import argparse

import uvicorn

from lovia.cli.common import load_agents
from lovia.stores.open import open_stores
from lovia.web import create_app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", default="lovia_")
    parser.add_argument("--app", required=True)
    parser.add_argument("--lease-ttl", type=float, default=30.0)
    args = parser.parse_args()
    session, checkpointer = open_stores(args.db, table_prefix=args.prefix)
    app = create_app(
        load_agents(args.app, False),
        session=session,
        checkpointer=checkpointer,
        lease_ttl=args.lease_ttl,
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
