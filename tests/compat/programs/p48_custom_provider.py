"""A user's own Provider (four members) driving runs: text, tool calls, usage, retries."""

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


from lovia import Agent, ProviderError, RetryPolicy, Runner, events, tool
from lovia.transcript import FinishDelta, TextDelta, ToolCallDelta, UsageDelta


class EchoProvider:
    """Answers with a tool call first, then echoes the tool result."""

    name = "echo"
    model = "echo-1"
    supports_json_schema = False

    def __init__(self, fail_first=0):
        self.seen = []
        self.fail_first = fail_first

    async def stream(self, entries, *, tools=None, response_format=None, settings=None):
        from lovia import Usage

        self.seen.append(
            [
                [e.type for e in entries],
                sorted(t["name"] if "name" in t else t["function"]["name"] for t in (tools or [])),
            ]
        )
        if self.fail_first:
            self.fail_first -= 1
            raise ProviderError("overloaded", retryable=True, status_code=529)
        results = [e for e in entries if e.type == "tool_result"]
        if not results:
            yield ToolCallDelta(index=0, call_id="k1", name="shout", arguments='{"word": "hi"}')
            yield UsageDelta(usage=Usage(input_tokens=10, output_tokens=2))
            yield FinishDelta(reason="tool_calls")
            return
        for chunk in ("you said ", results[-1].output):
            yield TextDelta(text=chunk)
        yield UsageDelta(usage=Usage(input_tokens=20, output_tokens=4))
        yield FinishDelta(reason="stop")


@tool
def shout(word: str) -> str:
    """Shout a word."""
    return word.upper()


@check("run")
def _():
    provider = EchoProvider()
    r = Runner.run_sync(
        Agent(name="a", instructions="Echo.", model=provider, tools=[shout]), "say hi"
    )
    return [
        r.output,
        r.turns,
        r.finish_reason,
        [r.usage.input_tokens, r.usage.output_tokens],
        provider.seen,
    ]


@check("stream_deltas")
def _():
    async def main():
        handle = Runner.stream(Agent(name="a", model=EchoProvider(), tools=[shout]), "say hi")
        return [ev.delta async for ev in handle if isinstance(ev, events.TextDelta)]

    return main()


@check("retry_event")
def _():
    async def main():
        async def no_sleep(_):
            return None

        policy = RetryPolicy(max_attempts=3, backoff_base=0.0, sleep=no_sleep)
        handle = Runner.stream(
            Agent(name="a", model=EchoProvider(fail_first=1), tools=[shout], retry=policy), "say hi"
        )
        out = []
        async for ev in handle:
            if type(ev).__name__ == "ModelRetrying":
                out.append(["ModelRetrying", type(ev.error).__name__, ev.attempt, ev.max_attempts])
        r = await handle
        return [out, r.output, r.turns]

    return main()


@check("retry_policy_defaults")
def _():
    p = RetryPolicy()
    return [p.max_attempts, p.restart_on_partial, p.backoff_base, p.backoff_max]


@check("no_retry")
def _():
    try:
        Runner.run_sync(
            Agent(name="a", model=EchoProvider(fail_first=1), tools=[shout], retry=None), "x"
        )
        return "ok"
    except ProviderError as exc:
        return ["ProviderError", exc.status_code, exc.retryable]


print(json.dumps(RESULTS, sort_keys=True))
