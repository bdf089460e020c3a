"""The offline demo agent: try ``lovia web --demo`` or ``lovia chat --demo`` with no API key.

It is clearly not a language model. A small script (``lovia.testing.ScriptedProvider`` with a
callable turn) reads the last message and answers: it tells the time, does arithmetic, waits
on request (so stopping a run mid-tool can be tried), and otherwise echoes what you wrote as
Markdown. Answers stream word by word, like a real model's.

::

    from lovia.demo import demo_agent
    result = await Runner.run(demo_agent(), "what is 6 * 7?")
"""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import operator
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from .agent import Agent
from .messages import AssistantTurn, Message
from .providers.base import ToolSpec
from .settings import ModelSettings
from .testing import ScriptedProvider, call, text
from .tools import Tool, tool
from .transcript import ModelDelta, TextDelta, TranscriptEntry

__all__ = ["DEMO_EXAMPLES", "DEMO_NOTICE", "DemoProvider", "demo_agent", "demo_turn"]

DEMO_NOTICE = "Demo agent: offline and scripted, not a language model."
MAX_WAIT_SECONDS = 30.0
DEMO_EXAMPLES = ("what time is it?", "calculate 6 * 7", "wait 5", "tell me a story")
"""What the demo answers, as the page's suggested prompts on a blank chat."""

_HELP = (
    "I am lovia's **demo agent** (offline, scripted; no model is called). Try:\n\n"
    "- `what time is it?` (calls the `current_time` tool)\n"
    "- `calculate 6 * 7` (calls `calculate`)\n"
    "- `wait 5` (a slow tool: press stop while it runs)\n"
    "- `tell me a story` (a long streamed answer)\n"
)
_STORY = (
    "Once upon a time a small agent kept a journal. Every time it finished a step it wrote "
    "the step down, so that when the power went out in the middle of a long task it could "
    "open the journal, see exactly where it had stopped, and carry on without doing anything "
    "twice. The people who used it never noticed the outages. They only noticed that the "
    "agent always remembered what they had said, even days later, because every finished "
    "conversation went into a second book that was never rewritten, only added to. "
    "And when someone wanted to take back a question, the agent tore out exactly the pages "
    "after it, no more and no less. The end."
)


@tool
def current_time() -> str:
    """The current date and time (UTC) as ISO 8601 text."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        if isinstance(node.op, ast.Pow) and abs(_evaluate(node.right)) > 100:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ValueError("only numbers and + - * / % ** are allowed")


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression such as ``(2 + 3) * 4``.

    Args:
        expression: numbers with + - * / % ** and parentheses.
    """
    value = _evaluate(ast.parse(expression, mode="eval").body)
    return str(value)


@tool
async def wait(seconds: float) -> str:
    """Wait for a number of seconds (at most 30), then say so.

    Args:
        seconds: how long to wait.
    """
    await asyncio.sleep(max(0.0, min(float(seconds), MAX_WAIT_SECONDS)))
    return f"waited {seconds:g} seconds"


_ARITH = re.compile(r"[-+*/%().\d\s]*\d[-+*/%().\d\s]*")
_WAIT = re.compile(r"\b(?:wait|sleep|slow)\b\D*(\d+(?:\.\d+)?)?", re.IGNORECASE)


def demo_turn(messages: list[Message]) -> AssistantTurn:
    """Decide the demo's next turn from the chat-format prompt (pure: no state, no clock)."""
    last = messages[-1] if messages else Message(role="user", content="")
    if last.role == "tool":
        return _after_tool(messages)
    said = last.text.strip()
    lowered = said.lower()
    if not said or lowered in {"help", "?", "hi", "hello"}:
        return text(_HELP)
    if "time" in lowered or "date" in lowered:
        return call("current_time", {}, call_id=_call_id(messages, "time"))
    m = _WAIT.search(said)
    if m:
        seconds = float(m.group(1) or 3)
        return call("wait", {"seconds": seconds}, call_id=_call_id(messages, "wait"))
    expression = said.split(" ", 1)[1] if lowered.startswith(("calc", "compute")) else said
    if _ARITH.fullmatch(expression.strip()) and any(op in expression for op in "+-*/%"):
        args = {"expression": expression.strip()}
        return call("calculate", args, call_id=_call_id(messages, "calc"))
    if "story" in lowered or "long" in lowered:
        return text(_STORY)
    return text(f"You said:\n\n{said}\n\n_(demo agent: offline and scripted. Type `help`.)_")


def _call_id(messages: list[Message], kind: str) -> str:
    return f"call_{kind}_{len(messages)}"


def _after_tool(messages: list[Message]) -> AssistantTurn:
    output = messages[-1].text
    name = ""
    for m in reversed(messages):
        for c in m.tool_calls:
            if c.id == messages[-1].tool_call_id:
                name = c.name
        if name:
            break
    if name == "current_time":
        return text(f"It is **{output}** (UTC).")
    if name == "calculate":
        return text(f"The result is **{output}**.")
    return text(f"Done: {output}.")


class DemoProvider:
    """A ``Provider`` that wraps a fresh ``ScriptedProvider([demo_turn])`` per call and
    streams its text a few characters at a time, ``delay`` seconds apart."""

    name = "demo"
    supports_json_schema = False

    def __init__(self, *, delay: float = 0.03, model: str = "demo") -> None:
        self.delay = delay
        self.model = model

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        inner = ScriptedProvider([demo_turn], model=self.model)
        word = ""  # the scripted model streams one character per delta; show whole words
        async for delta in inner.stream(entries, tools=tools, settings=settings):
            if isinstance(delta, TextDelta):
                word += delta.text
                if word[-1].isspace():
                    await asyncio.sleep(self.delay)
                    yield TextDelta(word)
                    word = ""
                continue
            if word:
                await asyncio.sleep(self.delay)
                yield TextDelta(word)
                word = ""
            yield delta


DEMO_TOOLS: tuple[Tool, ...] = (current_time, calculate, wait)


def demo_agent(*, delay: float = 0.03, name: str = "demo") -> Agent:
    """The offline demo agent (``DemoProvider`` plus three small tools)."""
    return Agent(
        name,
        instructions=DEMO_NOTICE,
        model=DemoProvider(delay=delay),
        tools=list(DEMO_TOOLS),
    )
