"""``lovia worker --app MODULE:ATTR --db DSN``: run queued agent runs (``lovia.workers``)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
from typing import Any

from ..errors import UserError

__all__ = ["add_parser", "load_queue"]

log = logging.getLogger("lovia.workers")


def add_parser(sub: Any) -> None:
    help = "run queued agent runs from a PostgreSQL database (start as many as you like)"
    parser: argparse.ArgumentParser = sub.add_parser(
        "worker",
        help=help,
        description=help + ". SIGTERM or Ctrl-C stops taking runs, lets the current ones "
        "finish for --graceful-timeout seconds, then hands the rest back to the queue.",
    )
    parser.add_argument(
        "--app",
        required=True,
        metavar="MODULE:ATTR",
        help="an AgentQueue, an Agent, or a {name: Agent} mapping, e.g. myapp:queue",
    )
    parser.add_argument(
        "--db", metavar="DSN", help="postgresql:// URL (default: the AgentQueue's own)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="runs at once (default 4)"
    )
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds the current runs get to finish on SIGTERM (default 30)",
    )
    parser.add_argument("--quiet", action="store_true", help="log warnings only")
    parser.set_defaults(handler=run_worker)


def load_queue(spec: str, db: str | None) -> Any:
    """The ``AgentQueue`` named by ``MODULE:ATTR`` (an Agent or mapping is wrapped in one)."""
    from ..agent import Agent
    from ..workers import AgentQueue

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UserError(
            f"--app must be MODULE:ATTR, got {spec!r}", hint="e.g. --app myapp.jobs:queue"
        )
    if "" not in sys.path:
        sys.path.insert(0, "")  # the current directory, as python -m does
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(
            f"cannot load --app {spec!r}: {exc}",
            hint="run from the directory holding the module, or set PYTHONPATH",
        ) from exc
    if isinstance(target, AgentQueue):
        if db:
            target.db = db
        return target
    if isinstance(target, Agent) or isinstance(target, dict):
        if not db:
            raise UserError(f"--app {spec!r} is not an AgentQueue", hint="pass --db DSN")
        return AgentQueue(target, db)
    raise UserError(
        f"--app {spec!r} is a {type(target).__name__}",
        hint="point it at an AgentQueue, an Agent or a {name: Agent} mapping",
    )


async def run_worker(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {args.concurrency}")
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    queue = load_queue(args.app, args.db)
    queue._require_postgres("lovia worker")
    stopping = asyncio.Event()

    def stop() -> None:
        stopping.set()
        queue.stop_worker()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    try:
        while not stopping.is_set():
            try:
                await queue.run_worker(
                    concurrency=args.concurrency,
                    graceful_timeout=args.graceful_timeout,
                    install_signal_handlers=False,
                )
            except Exception as exc:  # the database went away: start over
                log.warning("worker stopped (%s); starting again", exc)
            if not stopping.is_set():
                await asyncio.sleep(1.0)
    finally:
        await queue.shutdown()
    return 0
