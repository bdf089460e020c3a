"""``lovia sessions fork`` and ``lovia runs fork``: copy a conversation, or a run at a step,
into a new id with the stores' own atomic fork; the source is never changed."""

from __future__ import annotations

import argparse
import uuid

from ..errors import UserError
from .common import counted, db_stores, print_json, stored_run
from .parked import resume_command

__all__ = ["add_fork_arguments", "add_session_fork_arguments", "runs_fork", "sessions_fork"]


def add_session_fork_arguments(p: argparse.ArgumentParser, session_help: str) -> None:
    p.add_argument("session_id", help=session_help)
    p.add_argument("new_id", help="the id of the new session (it must not exist yet)")
    p.add_argument("--upto-run", metavar="RUN_ID", help="copy runs up to and including this one")


def add_fork_arguments(p: argparse.ArgumentParser, run_help: str) -> None:
    p.add_argument("run_id", help=run_help)
    p.add_argument(
        "--at-turn",
        type=int,
        required=True,
        metavar="N",
        help="keep model turns 1..N and what answered them (0: only the input)",
    )
    p.add_argument("--run-id", dest="new_run_id", metavar="NEW_RUN_ID", help="default: generated")
    p.add_argument("--before-call", metavar="CALL_ID", help="cut turn N before this call's result")
    p.add_argument("--input", dest="user_input", metavar="TEXT", help="replace the last user input")
    p.add_argument(
        "--tool-result",
        action="append",
        default=[],
        metavar="CALL_ID=TEXT",
        help="replace turn N's result of this call (repeatable)",
    )
    p.add_argument(
        "--drop-call", action="append", default=[], metavar="CALL_ID", help="drop a call of turn N"
    )
    p.add_argument(
        "--session-id",
        dest="new_session_id",
        metavar="NEW_ID",
        help="a run of a session: the fork's session (default: the new run id)",
    )
    group = p.add_argument_group("the agent for the resume command it prints")
    group.add_argument("--app", metavar="MODULE:ATTR", help="the agent that resumes the fork")
    group.add_argument("--demo", action="store_true", help="the offline demo agent resumes it")


async def sessions_fork(args: argparse.Namespace) -> int:
    async with db_stores(args) as (session, _cp):
        copied = await session.fork(args.session_id, args.new_id, upto_run=args.upto_run)
    entries = sum(len(s.entries) for s in copied)
    if args.json:
        print_json(
            {
                "session_id": args.new_id,
                "forked_from": args.session_id,
                "upto_run": args.upto_run,
                "runs": len(copied),
                "entries": entries,
            }
        )
        return 0
    print(
        f"forked session {args.session_id!r} into {args.new_id!r} "
        f"({counted(len(copied), 'run')}, {counted(entries, 'entry', 'entries')})"
    )
    return 0


def _tool_results(given: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in given:
        call, sep, text = item.partition("=")
        if not sep or not call:
            raise UserError(
                f"--tool-result takes CALL_ID=TEXT, got {item!r}",
                hint="e.g. --tool-result call_1='42' ('lovia runs show' lists the call ids)",
            )
        out[call] = text
    return out


async def runs_fork(args: argparse.Namespace) -> int:
    """Fork a run at a step. A run of a session goes on in a fork of that session up to just
    before the run, so its resume sees the history the run saw, not the run's own answer."""
    source = await stored_run(args)
    new_run_id = args.new_run_id or f"{args.run_id}-fork-{uuid.uuid4().hex[:8]}"
    results = _tool_results(args.tool_result)
    async with db_stores(args) as (session, cp):
        from ..stores.fork import fork_run_in_session

        forked, new_session = await fork_run_in_session(
            session,
            cp,
            args.run_id,
            new_run_id,
            new_session_id=args.new_session_id if source.session_id is not None else None,
            at_turn=args.at_turn,
            before_call=args.before_call,
            user_input=args.user_input,
            tool_results=results,
            drop_calls=args.drop_call,
        )
    command = resume_command(args, new_run_id)
    if args.json:
        print_json(
            {
                "run_id": new_run_id,
                "forked_from": args.run_id,
                "at_turn": args.at_turn,
                "session_id": new_session,
                "entries": len(forked.entries),
                "resume": command,
            }
        )
        return 0
    where = f" in session {new_session!r}" if new_session else ""
    print(
        f"forked run {args.run_id!r} after turn {args.at_turn} into {new_run_id!r}{where} "
        f"({counted(len(forked.entries), 'entry', 'entries')})"
    )
    print(f"resume it: {command}")
    return 0
