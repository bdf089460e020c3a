"""Context pressure: a huge tool result leaves the view, the transcript keeps it whole."""

# ruff: noqa: E402
import asyncio
import json
import sys
import traceback

RESULTS: dict = {}


def check(name):
    """Record what ``fn`` returns (or which exception it raised) under ``name``."""

    def record(fn):
        try:
            value = fn()
            if asyncio.iscoroutine(value):
                value = asyncio.run(value)
            json.dumps(value)
        except Exception as exc:
            print(f"--- {name}:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            value = {"raised": type(exc).__name__}
        RESULTS[name] = value
        return fn

    return record


from lovia import Agent, Compaction, InMemoryResultStore, Runner, events, tool
from lovia.transcript import FinishDelta, TextDelta, ToolCallDelta


class LogReader:
    """A user's provider that reports no token usage: asks for five dumps, then answers."""

    name = "reader"
    model = None
    supports_json_schema = False

    def __init__(self):
        self.calls = []

    async def stream(self, entries, *, tools=None, response_format=None, settings=None):
        self.calls.append(list(entries))
        n = len(self.calls) - 1
        if n < 5:
            yield ToolCallDelta(index=0, call_id=f"d{n}", name="dump", arguments=f'{{"part": {n}}}')
            yield FinishDelta(reason="tool_calls")
        else:
            yield TextDelta(text="summary")
            yield FinishDelta(reason="stop")


@tool
def dump(part: int) -> str:
    """Dump a big log."""
    return "\n".join(f"part {part} line {i}: " + "x" * 60 for i in range(400))


@check("offload")
def _():
    async def main():
        provider = LogReader()
        policy = Compaction(
            context_window=40_000, reserve_output_tokens=1_000, store=InMemoryResultStore()
        )
        agent = Agent(name="a", model=provider, tools=[dump], context_policy=policy)
        handle = Runner.stream(agent, "read the logs")
        compacted = []
        async for ev in handle:
            if isinstance(ev, events.ContextCompacted):
                compacted.append(
                    [
                        type(ev.notice).__name__,
                        ev.notice.reactive,
                        isinstance(ev.notice.reason, str),
                        len(ev.entries_before) >= len(ev.entries_after),
                    ]
                )
        r = await handle
        full = [len(e.output) for e in r.entries if e.type == "tool_result"]
        last_view = [
            [e.type, e.call_id, len(e.output)]
            for e in provider.calls[-1]
            if e.type == "tool_result"
        ]
        shorter = [length < min(full) for _, _, length in last_view]
        return {
            "compacted_events": len(compacted) > 0,
            "notice": compacted[:1],
            "stored_full_lengths": full,
            "oldest_offloaded_newest_kept": [shorter[0], shorter[-1]],
            "view_ids": [cid for _, cid, _ in last_view],
        }

    return main()


print(json.dumps(RESULTS, sort_keys=True))
