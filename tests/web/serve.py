"""A web server process for the tests: ``python -m tests.web.serve --db DB --port N
[--prefix P] [--write-timeout S] --app MODULE:ATTR``. Like ``lovia web`` (its HTTP protocol
too), plus a PostgreSQL table prefix so each test has its own tables."""

from __future__ import annotations

import argparse

import uvicorn

from lovia.cli.common import load_agents
from lovia.stores.open import is_postgres_url, open_stores
from lovia.web import ChatStore, create_app
from lovia.web.serving import WRITE_TIMEOUT, header_timeout_protocol


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", default="lovia_")
    parser.add_argument("--app", required=True)
    parser.add_argument("--lease-ttl", type=float, default=30.0)
    parser.add_argument("--write-timeout", type=float, default=WRITE_TIMEOUT)
    args = parser.parse_args()
    session, checkpointer = open_stores(args.db, table_prefix=args.prefix)
    meta = ":memory:" if is_postgres_url(args.db) else args.db
    store = ChatStore(session, checkpointer=checkpointer, meta_path=meta, wal=True)
    app = create_app(
        load_agents(args.app, False), store=store, titles=False, lease_ttl=args.lease_ttl
    )
    http = header_timeout_protocol(write_timeout=args.write_timeout)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", http=http)


if __name__ == "__main__":
    main()
