"""A process appending runs to one session: ``appender.py STORE_JSON WORKER COUNT``.

Each run is three entries naming the worker and the run; every worker also appends the one
run id "shared", which the session must hold once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry

from .worker import open_stores


def run_entries(worker: str, n: int) -> list[Any]:
    tag = f"{worker}-{n}"
    return [
        InputEntry(role="user", content=f"q {tag}"),
        ToolCallEntry(call_id=f"c-{tag}", name="f", arguments="{}"),
        ToolResultEntry(call_id=f"c-{tag}", output=f"r {tag}"),
        AssistantTextEntry(content=f"a {tag}"),
    ]


async def main(store: dict[str, Any], worker: str, count: int) -> None:
    session, cp = open_stores(store)
    try:
        for n in range(count):
            await session.append("shared-chat", run_entries(worker, n), run_id=f"{worker}-{n}")
            if n == count // 2:
                await session.append("shared-chat", run_entries(worker, -1), run_id="shared")
    finally:
        await session.close()
        await cp.close()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
