"""``lovia chat``: the terminal chat. Ctrl-C stops a run the way the page's stop button does.

Commands inside the chat: ``/new`` (a fresh session), ``/history`` (entries with their
index), ``/rewind N`` (keep the first N entries), ``/help``, ``/quit``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
import uuid
from typing import Any

from ..errors import LoviaError, UserError
from .common import (
    NO_MODEL_HINT,
    add_agent_options,
    add_db_option,
    load_agents,
    open_stores,
    shown_db,
)
from .render import describe_entry

__all__ = ["add_parser"]

HELP = "commands: /new  /history  /rewind N  /help  /quit   (Ctrl-C stops a running answer)"


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "chat",
        help="chat with an agent in the terminal",
        description=f"Chat in the terminal; the conversation is stored in --db. {HELP}",
    )
    add_agent_options(parser)
    add_db_option(parser)
    parser.add_argument("--session", metavar="ID", help="continue this session (default: new)")
    parser.set_defaults(handler=run_chat)


async def _read_line(prompt: str) -> str | None:
    """``input()`` on a daemon thread, so the loop keeps handling Ctrl-C and exit never waits."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str | None] = loop.create_future()

    def read() -> None:
        try:
            line: str | None = input(prompt)
        except (EOFError, KeyboardInterrupt):
            line = None

        def deliver() -> None:
            if not future.done():
                future.set_result(line)

        loop.call_soon_threadsafe(deliver)

    threading.Thread(target=read, daemon=True).start()
    return await future


def _print_event(event: dict[str, Any]) -> None:
    kind = event.get("type")
    out = sys.stdout
    if kind == "text_delta":
        out.write(str(event["delta"]))
    elif kind == "message_completed":
        if any(e.get("type") == "assistant_text" for e in event["entries"]):
            out.write("\n")
    elif kind == "tool_call_started":
        call = event["call"]
        out.write(f"  [tool] {call['name']}({call['arguments']})\n")
    elif kind == "tool_call_completed":
        out.write(f"  [tool] {event['call']['name']} -> {event['output'][:200]}\n")
    elif kind == "run_failed":
        if event.get("stopped"):
            out.write("\n[stopped: the answer so far is kept]\n")
        else:
            out.write(f"\n[run failed: {event['error'].get('message')}]\n")
    out.flush()


async def run_chat(args: argparse.Namespace) -> int:
    from ..web.chats import ChatBook
    from ..web.supervisor import RunSupervisor

    agents = load_agents(args.app, args.demo)
    if not agents:
        raise UserError("no model configured", hint=NO_MODEL_HINT)
    session, checkpointer = open_stores(args.db, create=True)
    supervisor = RunSupervisor(agents, ChatBook(session, checkpointer))
    chat_id = args.session or uuid.uuid4().hex
    loop = asyncio.get_running_loop()
    print(f"lovia chat: agent {next(iter(agents))}, session {chat_id}. {HELP}", flush=True)

    stopping: set[asyncio.Future[Any]] = set()

    def on_interrupt() -> None:
        if chat_id in supervisor.live:
            task = asyncio.ensure_future(supervisor.stop(chat_id))
            stopping.add(task)
            task.add_done_callback(stopping.discard)

    with contextlib.suppress(NotImplementedError):  # no signal handlers on some platforms
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        while True:
            line = await _read_line("you> ")
            if line is None or line.strip() in ("/quit", "/exit"):
                break
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                chat_id = await _command(text, chat_id, supervisor)
                continue

            async def prepare(text: str = text) -> str:
                return text

            try:
                run = await supervisor.begin(chat_id, prepare)
            except LoviaError as exc:
                print(f"[{exc}]")
                continue
            async for _, event in run.follow():
                _print_event(event)
            await run.finished.wait()
    finally:
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)
        await supervisor.close()
        await session.close()
        await checkpointer.close()
    print(f"bye (session {chat_id} is stored in {shown_db(args.db)})")
    return 0


async def _command(text: str, chat_id: str, supervisor: Any) -> str:
    name, _, rest = text.partition(" ")
    if name == "/new":
        chat_id = uuid.uuid4().hex
        print(f"[new session {chat_id}]")
    elif name == "/history":
        entries = await supervisor.chats.session.load(chat_id)
        if not entries:
            print("[no history yet]")
        for i, e in enumerate(entries):
            print(f"  [{i}] {describe_entry(e)}")
    elif name == "/rewind":
        if not rest.strip().isdigit():
            print("[usage: /rewind N  (keep the first N entries; see /history)]")
        else:
            done = await supervisor.chats.rewind(chat_id, int(rest))
            print(f"[removed {done.removed} entries]")
    elif name == "/help":
        print(HELP)
    else:
        print(f"[unknown command {name}; {HELP}]")
    return chat_id
