"""A web server for ``test_v0_9_119_behaviour``: ``python -m tests.web.parity_server --port N
--db DB --release FILE``. It serves, under the name ``assistant``, an agent named ``lovia``
(as 0.9.119's CLI does) whose scripted model answers by the first word of the last message:

- ``snap``: calls ``snap`` (a tool returning text and a PNG), then answers ``done``;
- ``gate``: calls ``gated`` (needs approval), then answers ``ack``;
- ``wait``: calls ``wait`` (returns once the file ``--release`` names exists);
- ``ask``: calls ``ask_human``;
- anything else: answers ``ok``.

Its provider reports a 32,000-token window. ``--no-rewind`` serves a session store that
cannot cut a chat. Before serving, chat ``compacted`` gets one run whose segment carries a
context-compaction notice."""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
from pathlib import Path
from typing import Any

import uvicorn

from lovia import Agent, tool
from lovia.messages import AssistantTurn, Message
from lovia.parts import ImagePart, TextPart
from lovia.session import NOTICE_META_KEY
from lovia.stores import InMemorySession, SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, call, text
from lovia.tools.human import HumanChannel, ask_human
from lovia.transcript import AssistantTextEntry, InputEntry
from lovia.web import ChatStore, create_app

PNG = b"\x89PNG-test-bytes"
NOTICE = {"reason": "offload+clear", "reactive": False, "summary": None, "tokens_before": 9000,
          "tokens_after": 5000, "detail": ["2 tool results cleared"]}  # fmt: skip


def _turn(messages: list[Message]) -> AssistantTurn:
    last = messages[-1]
    if last.role == "tool":
        return text("done" if "shot" in str(last.content) else "ack")
    word = str(last.content or "").split(" ", 1)[0]
    n = len(messages)
    if word == "snap":
        return call("snap", {}, call_id=f"snap{n}")
    if word == "gate":
        return call("gated", {}, call_id="gate1")
    if word == "wait":
        return call("wait", {}, call_id=f"wait{n}")
    if word == "ask":
        return call("ask_human", {"question": "which one?"}, call_id=f"ask{n}")
    return text("ok")


class Model:
    """Answers every call with ``_turn`` (a fresh ``ScriptedProvider`` per call)."""

    name = "parity"
    model = "parity"
    supports_json_schema = False

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        async for event in ScriptedProvider([_turn]).stream(entries, **kwargs):
            yield event

    def context_window(self) -> int:
        return 32_000


class NoRewindSession(InMemorySession):
    """A session store without ``rewind`` / ``rewind_runs`` (a custom store's shape)."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("rewind", "rewind_runs"):
            raise AttributeError(name)
        return super().__getattribute__(name)


def build(release: Path, db: str, no_rewind: bool) -> Any:
    @tool(returns_images=True)
    async def snap() -> list[Any]:
        """A screenshot."""
        data = base64.b64encode(PNG).decode("ascii")
        return [TextPart("shot.png"), ImagePart(data=data, mime_type="image/png")]

    @tool(needs_approval=True)
    async def gated() -> str:
        """Needs a person's approval."""
        return "did it"

    @tool
    async def wait() -> str:
        """Returns once the test releases it."""
        while not release.exists():  # noqa: ASYNC110, ASYNC240 - another process writes it
            await asyncio.sleep(0.05)
        return "released"

    channel = HumanChannel()
    agent = Agent(
        name="lovia",
        instructions="x",
        model=Model(),
        tools=[snap, gated, wait, ask_human(channel)],
    )
    if no_rewind:
        store = ChatStore(NoRewindSession(), checkpointer=SQLiteCheckpointer(db))
    else:
        store = ChatStore(SQLiteSession(db), checkpointer=SQLiteCheckpointer(db), meta_path=db)
    entries = [InputEntry(role="user", content="hi"), AssistantTextEntry(content="hello")]
    asyncio.run(
        store.session.append("compacted", entries, run_id="r1", meta={NOTICE_META_KEY: NOTICE})
    )
    return create_app({"assistant": agent}, store=store, titles=False, question_channel=channel)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--release", required=True)
    parser.add_argument("--no-rewind", action="store_true")
    args = parser.parse_args()
    app = build(Path(args.release), args.db, args.no_rewind)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
