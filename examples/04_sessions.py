"""Sessions: a conversation that remembers a fact across two processes.

Run: python examples/04_sessions.py

The script starts itself twice, each time as a new Python process on the same SQLite file.
The first process tells the agent a fact; the second asks for it. The second run's model
sees the first run because the session loads it as history.

To run one turn yourself: python examples/04_sessions.py chat.db "What is my project called?"
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lovia import Agent, Runner, SQLiteSession
from lovia.messages import Message
from lovia.testing import ScriptedProvider


def remembering_model(messages: list[Message]) -> str:
    """Stands in for a real model: it answers only from what the prompt tells it."""
    question = messages[-1].text
    earlier = [m.text for m in messages[:-1] if m.role == "user"]
    if "called" in question and question.endswith("?"):
        for said in earlier:
            if said.startswith("My project is called "):
                name = said.removeprefix("My project is called ").rstrip(".")
                return f"Your project is called {name}."
        return "You have not told me yet."
    return "Noted."


async def one_turn(db: str, message: str) -> str:
    agent = Agent(
        "assistant",
        instructions="Answer from the conversation so far.",
        model=ScriptedProvider([remembering_model]),
    )
    async with SQLiteSession(db) as session:
        result = await Runner.run(agent, message, session=session, session_id="user-1")
        history = await session.load("user-1")
    print(f"[process {os.getpid()}] you: {message}")
    print(f"[process {os.getpid()}] agent: {result.output}  ({len(history)} entries stored)")
    return str(result.output)


def main() -> None:
    if len(sys.argv) == 3:  # one turn, in this process
        asyncio.run(one_turn(sys.argv[1], sys.argv[2]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "chat.db")
        for message in ("My project is called Atlas.", "What is my project called?"):
            done = subprocess.run(
                [sys.executable, __file__, db, message], capture_output=True, text=True, check=True
            )
            print(done.stdout, end="")


if __name__ == "__main__":
    main()
