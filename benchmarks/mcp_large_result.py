"""What a huge answer from an MCP server over stdio costs the lovia process reading it.

    python benchmarks/mcp_large_result.py [--mb 100] [--quick]

A small stdio server (written here, no SDK) answers one ``tools/call`` with ``--mb`` megabytes
of text. A fresh lovia process (this script again, so its peak memory is its own) opens the
server with the server's default settings, calls the tool once through
``MCPConnection.call_tool`` and prints JSON: the call's wall time, the process's peak
resident memory (and the same before the call), the longest the event loop went without
running a 5 ms ticker (what every other chat of a ``lovia web`` would wait), and how many
characters of text came back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SERVER = r"""
import json, sys
out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    rid, method = msg.get("id"), msg.get("method")
    if rid is None:
        continue
    if method == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "bench", "version": "1"}}
    elif method == "tools/list":
        res = {"tools": [{"name": "huge", "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        size = msg["params"]["arguments"]["size"]
        head = b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode()
        out.write(head + b',"result":{"content":[{"type":"text","text":"')
        block = b"x" * (1 << 20)
        for _ in range(size // len(block)):
            out.write(block)
        out.write(b"x" * (size % len(block)) + b'"}],"isError":false}}\n')
        out.flush()
        continue
    else:
        res = {}
    out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}).encode() + b"\n")
    out.flush()
"""


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


async def _measure(size: int) -> dict[str, float | int]:
    from lovia.plugins.mcp import MCPServerStdio

    loop = asyncio.get_running_loop()
    worst = 0.0

    async def ticker() -> None:
        nonlocal worst
        while True:
            before = loop.time()
            await asyncio.sleep(0.005)
            worst = max(worst, loop.time() - before - 0.005)

    server = MCPServerStdio(name="bench", command=sys.executable, args=["-c", SERVER])
    async with server.session() as conn:
        rss_before = _rss_mb()
        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        result = await conn.call_tool("huge", {"size": size})
        seconds = time.perf_counter() - started
        tick.cancel()
        chars = len(str(result))
    return {
        "answer_mb": round(size / 1e6, 1),
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(_rss_mb(), 1),
        "rss_before_call_mb": round(rss_before, 1),
        "max_loop_stall_ms": round(worst * 1000, 1),
        "text_chars": chars,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the answer, in MB")
    parser.add_argument("--quick", action="store_true", help="a 5 MB answer, for CI")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = int((5.0 if args.quick else args.mb) * 1e6)
    if args.child:
        print(json.dumps(asyncio.run(_measure(size))))
        return
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--mb", str(size / 1e6)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(done.stderr[-2000:])
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    import lovia

    figures["lovia"] = str(Path(lovia.__file__).resolve().parents[1])
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
