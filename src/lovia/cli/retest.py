"""``lovia runs retest RUN_ID --app MODULE:ATTR``: re-run a stored run against its recorded
model turns and print where it diverges (exit status 1 when it does)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from pathlib import Path

from ..errors import UserError
from ..stores.checkpoint import RunSnapshot
from .common import load_agents, print_json, stored_run

__all__ = ["runs_retest"]


async def _recording(args: argparse.Namespace) -> RunSnapshot:
    """The run to re-test: from ``--from FILE`` (a ``lovia runs export``), else from ``--db``,
    read only: re-testing changes nothing stored."""
    if args.from_file is None:
        if args.run_id is None:
            raise UserError("which run? give its id, or --from FILE", hint="see 'lovia runs list'")
        return await stored_run(args)
    try:
        text = await asyncio.to_thread(Path(args.from_file).read_bytes)
    except OSError as exc:
        raise UserError(
            f"cannot read {args.from_file!r}: {exc.strerror or exc}",
            hint="pass --from the file 'lovia runs export RUN_ID --out FILE' wrote",
        ) from exc
    try:
        snap = RunSnapshot.from_json(text)
    except KeyError as exc:
        raise UserError(
            f"{args.from_file!r} is not a run written by 'lovia runs export' (it has no "
            f"{exc.args[0]!r})",
            hint="export the run again: lovia runs export RUN_ID --out FILE",
        ) from exc
    except (ValueError, TypeError) as exc:
        detail = getattr(exc, "message", None) or exc  # a LoviaError's without its hint
        raise UserError(
            f"{args.from_file!r} is not a run written by 'lovia runs export' ({detail})",
            hint="export the run again: lovia runs export RUN_ID --out FILE",
        ) from exc
    if args.run_id is not None and args.run_id != snap.run_id:
        raise UserError(
            f"{args.from_file!r} holds run {snap.run_id!r}, not {args.run_id!r}",
            hint="give no run id with --from, or the one the file holds",
        )
    return snap


async def runs_retest(args: argparse.Namespace) -> int:
    from ..chats.supervisor import entry_agent
    from ..testing._retest import retest

    snap = await _recording(args)
    agents = load_agents(args.app, args.demo)
    agent = entry_agent(agents, snap.agent_name)
    if agent is None:
        raise UserError(
            "no agent to re-run the recording with",
            hint="pass --app MODULE:ATTR, the agent (as changed) whose run it was",
        )
    report = await retest(agent, snap, snap.run_id)
    if args.json:
        print_json(
            {
                "run_id": report.run_id,
                "same": report.same,
                "divergences": [dataclasses.asdict(d) for d in report],
            }
        )
    else:
        print(report.diff())
    return 0 if report.same else 1
