"""An agent retries a rate limit by default (retry=None turns that off); an assistant-role
InputEntry seeds the model's side of a conversation, through runs, dicts and SQLite files."""

# ruff: noqa: E402
import asyncio
import dataclasses
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


from lovia import Agent, ProviderError, RetryPolicy, Runner, SQLiteSession
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, entries_to_messages, entry_from_dict, entry_to_dict

SLEPT: list = []


async def no_sleep(seconds):
    SLEPT.append(seconds)


class RateLimitedOnce(ScriptedProvider):
    """Answers from its script after failing ``failures`` times with HTTP ``status``."""

    def __init__(self, script, failures=1, status=429):
        super().__init__(script)
        self.failures = failures
        self.status = status
        self.attempts = 0

    async def stream(self, entries, **kwargs):
        self.attempts += 1
        if self.attempts <= self.failures:
            raise ProviderError(f"HTTP {self.status}", status_code=self.status, retryable=None)
        async for delta in super().stream(entries, **kwargs):
            yield delta


def fast(agent):
    """The agent with its own retry policy, only without real waiting."""
    return agent.clone(retry=dataclasses.replace(agent.retry, sleep=no_sleep))


async def events_of(agent, prompt="hi"):
    handle = Runner.stream(agent, prompt)
    names = []
    async for ev in handle:
        name = type(ev).__name__
        if name == "ModelRetrying":
            names.append([name, ev.attempt, ev.max_attempts])
        elif "Delta" not in name:
            names.append([name])
    try:
        result = await handle.result()
        return [names, result.output]
    except Exception as exc:
        return [names, {"raised": type(exc).__name__}]


@check("default_policy")
def _():
    p = Agent(name="a").retry
    return [
        type(p).__name__,
        p.max_attempts,
        p.restart_on_partial,
        p.backoff_base,
        p.backoff_max,
        p == RetryPolicy(),
        Agent(name="a", retry=None).retry,
        Agent(name="a").clone(retry=None).retry,
        Agent(name="a").clone(name="b").retry == RetryPolicy(),
    ]


@check("default_agent_retries_a_rate_limit")
def _():
    async def main():
        model = RateLimitedOnce([text("ok")])
        out = await events_of(fast(Agent(name="a", model=model)))
        return [out, model.attempts, len(SLEPT) > 0]

    return main()


@check("default_agent_gives_up_after_five_attempts")
def _():
    async def main():
        model = RateLimitedOnce([text("ok")], failures=9)
        return [await events_of(fast(Agent(name="a", model=model))), model.attempts]

    return main()


@check("retry_none_fails_at_once")
def _():
    async def main():
        model = RateLimitedOnce([text("ok")])
        return [await events_of(Agent(name="a", model=model, retry=None)), model.attempts]

    return main()


@check("a_permanent_error_is_not_retried")
def _():
    async def main():
        model = RateLimitedOnce([text("ok")], status=400)
        model.status = 400
        out = await events_of(fast(Agent(name="a", model=model)))
        return [out, model.attempts]

    return main()


@check("as_tool_sub_run_uses_the_agents_default_policy")
def _():
    async def main():
        inner_model = RateLimitedOnce([text("inner answer")])
        inner = fast(Agent(name="inner", model=inner_model))
        outer_model = ScriptedProvider(
            [
                call("ask_inner", {"input": "q"}),
                text("done"),
            ]
        )
        outer = Agent(name="outer", model=outer_model, tools=[inner.as_tool(name="ask_inner")])
        result = await Runner.run(outer, "go")
        return [result.output, inner_model.attempts, outer_model.calls[1][-1].content]

    return main()


SEED = InputEntry(role="assistant", content="I said hello earlier.")


@check("assistant_input_entry")
def _():
    d = entry_to_dict(SEED)
    back = entry_from_dict(d)
    m = entries_to_messages([InputEntry(role="user", content="hi"), SEED])
    return [d, [back.type, back.role, back.content], [[x.role, x.content] for x in m]]


@check("assistant_input_in_a_sqlite_session")
def _():
    async def main():
        session = SQLiteSession("chat.db")
        await session.append("c1", [InputEntry(role="user", content="hello"), SEED], run_id="seed")
        model = ScriptedProvider([text("fine")])
        result = await Runner.run(
            Agent(name="a", model=model, instructions="be brief"),
            "and now?",
            session=session,
            session_id="c1",
        )
        again = SQLiteSession("chat.db")
        loaded = await again.load("c1")
        return [
            [[m.role, m.content] for m in model.calls[0]],
            [[m.role, m.content] for m in result.messages],
            [[e.type, getattr(e, "role", None)] for e in loaded],
        ]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
