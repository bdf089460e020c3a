"""What lovia's providers add on top of the vendor SDK when streaming a long answer.

    python benchmarks/provider_stream.py [--chunks 2000] [--repeats 7] [--quick]

Both sides read the same answer from the same protocol server on 127.0.0.1: the baseline
iterates the SDK's raw stream, the measured side runs ``provider.stream`` (translation,
deltas, assembly into entries). Prints JSON with median milliseconds and the ratio
lovia / SDK for each provider; a ratio near 1 means the provider's own work is negligible.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anthropic
import openai
from tests.providers.server import (
    ProtocolServer,
    Reply,
    anthropic_text_stream,
    openai_text_stream,
)

from lovia import AnthropicProvider, InputEntry, OpenAIChatProvider

PROMPT = [InputEntry(role="user", content="Tell me a long story.")]


async def _time(fn: Callable[[], Awaitable[int]]) -> tuple[float, int]:
    started = time.perf_counter()
    n = await fn()
    return (time.perf_counter() - started) * 1000, n


async def _measure(
    server: ProtocolServer,
    reply: Reply,
    sdk: Callable[[], Awaitable[int]],
    ours: Callable[[], Awaitable[int]],
    repeats: int,
) -> dict[str, Any]:
    sdk_ms: list[float] = []
    lovia_ms: list[float] = []
    server.add(reply, reply)  # warm up both sides (imports, first connection)
    await sdk()
    await ours()
    for _ in range(repeats):  # alternate so drift hits both sides alike
        server.add(reply, reply)
        ms, _n = await _time(sdk)
        sdk_ms.append(ms)
        ms, _n = await _time(ours)
        lovia_ms.append(ms)
    sdk_median = statistics.median(sdk_ms)
    lovia_median = statistics.median(lovia_ms)
    return {
        "sdk_ms": round(sdk_median, 2),
        "lovia_ms": round(lovia_median, 2),
        "ratio": round(lovia_median / sdk_median, 3),
    }


async def bench(chunks: int, repeats: int) -> dict[str, Any]:
    text = "abcd" * chunks  # the stream helpers send four characters per chunk
    server = ProtocolServer().start()
    try:
        oa_client = openai.AsyncOpenAI(api_key="k", base_url=f"{server.url}/v1", max_retries=0)
        oa = OpenAIChatProvider("bench", base_url=f"{server.url}/v1", api_key="k")
        an_client = anthropic.AsyncAnthropic(api_key="k", base_url=server.url, max_retries=0)
        an = AnthropicProvider("bench", base_url=server.url, api_key="k")

        async def oa_sdk() -> int:
            stream = await oa_client.chat.completions.create(
                model="bench",
                messages=[{"role": "user", "content": "Tell me a long story."}],
                stream=True,
                stream_options={"include_usage": True},
            )
            return sum([1 async for _ in stream])

        async def an_sdk() -> int:
            stream = await an_client.messages.create(
                model="bench",
                max_tokens=4096,
                messages=[{"role": "user", "content": "Tell me a long story."}],
                stream=True,
            )
            return sum([1 async for _ in stream])

        async def oa_lovia() -> int:
            return sum([1 async for _ in oa.stream(PROMPT)])

        async def an_lovia() -> int:
            return sum([1 async for _ in an.stream(PROMPT)])

        result = {
            "chunks": chunks,
            "repeats": repeats,
            "openai": await _measure(
                server, Reply(events=openai_text_stream(text)), oa_sdk, oa_lovia, repeats
            ),
            "anthropic": await _measure(
                server, Reply(events=anthropic_text_stream(text)), an_sdk, an_lovia, repeats
            ),
        }
        await oa_client.close()
        await an_client.close()
        return result
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a short run for CI")
    args = parser.parse_args()
    chunks, repeats = (200, 3) if args.quick else (args.chunks, args.repeats)
    print(json.dumps(asyncio.run(bench(chunks, repeats)), indent=2))


if __name__ == "__main__":
    main()
