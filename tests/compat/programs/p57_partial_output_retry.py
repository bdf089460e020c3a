"""A provider fails mid-stream: the partial text is discarded and the turn restarts."""

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


from lovia import Agent, ProviderError, RetryPolicy, Runner, events
from lovia.transcript import FinishDelta, TextDelta


class Flaky:
    name = "flaky"
    model = None
    supports_json_schema = False

    def __init__(self):
        self.attempts = 0

    async def stream(self, entries, *, tools=None, response_format=None, settings=None):
        self.attempts += 1
        if self.attempts == 1:
            yield TextDelta(text="Hal")
            raise ProviderError("connection reset", retryable=True)
        yield TextDelta(text="Hello")
        yield FinishDelta(reason="stop")


async def no_sleep(_):
    return None


@check("restart_on_partial")
def _():
    async def main():
        provider = Flaky()
        agent = Agent(
            name="a",
            model=provider,
            retry=RetryPolicy(max_attempts=3, backoff_base=0.0, sleep=no_sleep),
        )
        handle = Runner.stream(agent, "hi")
        seen = []
        async for ev in handle:
            if isinstance(ev, events.TextDelta):
                seen.append(["TextDelta", ev.delta])
            elif type(ev).__name__ in (
                "OutputDiscarded",
                "ModelRetrying",
                "MessageCompleted",
                "RunCompleted",
            ):
                seen.append([type(ev).__name__])
        r = await handle
        return [seen, r.output, r.turns, provider.attempts, [e.type for e in r.entries]]

    return main()


@check("no_restart_fails")
def _():
    async def main():
        agent = Agent(
            name="a",
            model=Flaky(),
            retry=RetryPolicy(
                max_attempts=3, backoff_base=0.0, sleep=no_sleep, restart_on_partial=False
            ),
        )
        try:
            return (await Runner.run(agent, "hi")).output
        except ProviderError as exc:
            return ["ProviderError", exc.retryable]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
