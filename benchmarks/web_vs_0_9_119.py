"""This project's web server and 0.9.119's, the same workload on each, in one run.

Each server is a real subprocess on 127.0.0.1 (uvicorn), serving one agent whose model is
an OpenAI-compatible streaming server of this file (a third subprocess, shared by both):
each answer is ``--tokens`` chunks, the first at once, the next ``--gap-ms`` apart, so the
time to first token a client sees is what the server adds. Per server:

- ``stream``: ``--chats`` new chats streaming at once (``POST /api/chat/stream``): time to
  the first ``text_delta`` (p50, p99) and to ``done`` (p50, p99), and the wall time;
- ``list``: ``GET /api/sessions`` (the first page) and a search, with ``--stored`` chats
  in the store (made with ``ChatStore.upsert`` before the server starts): median and p99;
- ``idle_chat_kb``: the server's resident memory grown per chat, over ``--idle`` chats
  each made by one blocking ``POST /api/chat`` and left idle (Linux only, else null).

``ratios`` is this project's figure over 0.9.119's (below 1: this project is faster /
smaller). The reference runs under ``--ref-python`` (or ``$LOVIA_REFERENCE_PYTHON``): a Python
with lovia 0.9.119 and its web extra installed. Without one only this project is measured.

    python benchmarks/web_vs_0_9_119.py --ref-python PYTHON [--chats 50 --stored 10000]
    python benchmarks/web_vs_0_9_119.py --quick     # a tiny run (CI's smoke test)

The ``--role`` options are the subprocesses' entry points.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


# -- the model: an OpenAI-compatible Chat Completions server that streams -------------------


async def model_server(port: int, tokens: int, gap: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = json.loads(await reader.readexactly(length) or b"{}")
            if not body.get("stream"):
                answer = json.dumps(
                    {
                        "id": "c",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "fake",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "A title"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
                    }
                ).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(answer)}\r\nConnection: close\r\n\r\n".encode()
                    + answer
                )
                await writer.drain()
                return
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
            )
            for i in range(tokens):
                if i:
                    await asyncio.sleep(gap)
                delta: dict[str, Any] = {"content": f"tok{i} "}
                if i == 0:
                    delta["role"] = "assistant"
                writer.write(chunk([{"index": 0, "delta": delta, "finish_reason": None}]))
                await writer.drain()
            writer.write(chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
            usage = {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": tokens + 10}
            writer.write(chunk([], usage=usage))
            writer.write(b"data: [DONE]\n\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=512)
    async with server:
        await server.serve_forever()


def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> bytes:
    data: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake",
        "choices": choices,
    }
    if usage is not None:
        data["usage"] = usage
    return f"data: {json.dumps(data)}\n\n".encode()


# -- a web server: the same program under either lovia --------------------------------------


def web_server(port: int, model_url: str, db: str, stored: int) -> None:
    import uvicorn

    from lovia import Agent, OpenAIChatProvider
    from lovia.web import ChatStore, create_app

    async def fill() -> ChatStore:
        store = ChatStore.sqlite(db)
        for i in range(stored):
            await store.upsert(f"stored-{i:05d}", agent="bench", title=f"stored chat {i}")
        return store

    store = asyncio.run(fill())
    provider = OpenAIChatProvider("fake", api_key="unused", base_url=model_url)
    agent = Agent(name="bench", instructions="Answer.", model=provider)
    app = create_app(agent, store=store, titles=False, max_background_runs=1000)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


# -- the driver ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def spawn(cmd: list[str], cwd: str | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, cwd=cwd)


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


async def wait_ready(url: str, proc: subprocess.Popen[bytes], limit: float = 300) -> None:
    import httpx

    deadline = time.monotonic() + limit
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"the server for {url} exited with {proc.returncode}")
            try:
                if (await client.get(url + "/api/info")).status_code == 200:
                    return
            except Exception:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit(f"the server for {url} did not start")


async def one_stream(client: Any, url: str, n: int) -> tuple[float, float]:
    start = time.perf_counter()
    first = None
    event = ""
    async with client.stream(
        "POST", url + "/api/chat/stream", json={"message": f"hello {n}"}
    ) as response:
        if response.status_code != 200:
            raise SystemExit(f"stream answered {response.status_code}: {await response.aread()!r}")
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                if event == "text_delta" and first is None:
                    first = time.perf_counter() - start
                elif event == "error":
                    raise SystemExit(f"stream error: {line}")
                elif event == "done":
                    break
    if first is None:
        raise SystemExit("a stream ended without text")
    return first, time.perf_counter() - start


async def measure(url: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    limits = httpx.Limits(max_connections=args.chats + 10)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        await one_stream(client, url, -1)  # warm up
        wall = time.perf_counter()
        results = await asyncio.gather(*(one_stream(client, url, n) for n in range(args.chats)))
        wall = time.perf_counter() - wall
        firsts = [r[0] for r in results]
        totals = [r[1] for r in results]
        lists: dict[str, list[float]] = {"page": [], "search": []}
        paths = {"page": "/api/sessions", "search": "/api/sessions?q=stored%20chat%2042"}
        for name, path in paths.items():
            for _ in range(args.requests):
                start = time.perf_counter()
                response = await client.get(url + path)
                lists[name].append(time.perf_counter() - start)
                assert response.status_code == 200, response.text
        before = rss_kb(pid)
        for n in range(args.idle):
            response = await client.post(url + "/api/chat", json={"message": f"idle {n}"})
            assert response.status_code == 200, response.text
        await asyncio.sleep(0.5)
        after = rss_kb(pid)
    idle = None
    if before is not None and after is not None and args.idle:
        idle = round((after - before) / args.idle, 2)
    return {
        "stream": {
            "ttft_p50_ms": ms(statistics.median(firsts)),
            "ttft_p99_ms": ms(pct(firsts, 0.99)),
            "total_p50_ms": ms(statistics.median(totals)),
            "total_p99_ms": ms(pct(totals, 0.99)),
            "wall_ms": ms(wall),
        },
        "list": {
            "page_p50_ms": ms(statistics.median(lists["page"])),
            "page_p99_ms": ms(pct(lists["page"], 0.99)),
            "search_p50_ms": ms(statistics.median(lists["search"])),
        },
        "idle_chat_kb": idle,
        "rss_kb": after,
    }


async def run_server(python: str, model_url: str, args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        cmd = [python, "-I", str(HERE), "--role", "web", "--port", str(port)]
        cmd += ["--model-url", model_url, "--db", str(Path(folder) / "chats.db")]
        cmd += ["--stored", str(args.stored)]
        proc = spawn(cmd, folder)
        try:
            url = f"http://127.0.0.1:{port}"
            await wait_ready(url, proc)
            return await measure(url, proc.pid, args)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def ratios(ours: Any, ref: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(ours, dict) and isinstance(ref, dict):
        for key, value in ours.items():
            if key in ref and key != "rss_kb":
                out.update(ratios(value, ref[key], f"{prefix}{key}."))
    elif isinstance(ours, (int, float)) and isinstance(ref, (int, float)) and ref > 0:
        out[prefix.rstrip(".")] = round(ours / ref, 3)
    return out


async def drive(args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    model_cmd = [sys.executable, str(HERE), "--role", "model", "--port", str(port)]
    model_cmd += ["--tokens", str(args.tokens), "--gap-ms", str(args.gap_ms)]
    model = spawn(model_cmd, None)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        model_url = f"http://127.0.0.1:{port}/v1"
        out: dict[str, Any] = {
            "config": {
                "chats": args.chats,
                "stored": args.stored,
                "idle": args.idle,
                "requests": args.requests,
                "tokens": args.tokens,
                "gap_ms": args.gap_ms,
            }
        }
        out["this"] = await run_server(sys.executable, model_url, args)
        ref = args.ref_python or os.environ.get("LOVIA_REFERENCE_PYTHON")
        if ref:
            out["v0_9_119"] = await run_server(ref, model_url, args)
            out["ratios"] = ratios(out["this"], out["v0_9_119"])
        else:
            out["v0_9_119"] = "skipped: no --ref-python (a Python with lovia 0.9.119[web])"
        return out
    finally:
        model.terminate()
        model.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=("drive", "model", "web"), default="drive")
    parser.add_argument("--quick", action="store_true", help="a tiny run")
    parser.add_argument("--ref-python", default=None)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--stored", type=int, default=10_000)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--gap-ms", type=float, default=10.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model-url", default="")
    parser.add_argument("--db", default="")
    args = parser.parse_args()
    if args.role == "model":
        asyncio.run(model_server(args.port, args.tokens, args.gap_ms / 1000))
        return
    if args.role == "web":
        web_server(args.port, args.model_url, args.db, args.stored)
        return
    if args.quick:
        args.chats, args.stored, args.idle, args.requests, args.tokens = 5, 200, 5, 5, 5
    print(json.dumps(asyncio.run(drive(args)), indent=2))


if __name__ == "__main__":
    main()
