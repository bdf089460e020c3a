"""lovia.messages: Message, ToolCall and the constructor helpers."""

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


@check("constructors")
def _():
    from lovia.messages import Message, ToolCall, assistant, system, tool_message, user

    def d(m):
        return [
            type(m).__name__,
            m.role,
            m.content,
            m.tool_calls,
            m.tool_call_id,
            m.name,
            m.reasoning,
        ]

    return {
        "system": d(system("s")),
        "user": d(user("u")),
        "assistant": d(assistant("a")),
        "tool": d(tool_message("c9", "out")),
        "msg_default": d(Message(role="user")),
        "toolcall": [
            ToolCall(id="c1", name="f", arguments="{}").id,
            ToolCall("c2", "g", "{}").name,
        ],
        "equal": Message(role="user", content="x") == user("x"),
    }


@check("tool_call_message")
def _():
    from lovia.messages import Message, ToolCall

    m = Message(role="assistant", tool_calls=[ToolCall(id="c1", name="f", arguments='{"a": 1}')])
    return [m.content, [(c.id, c.name, c.arguments) for c in m.tool_calls]]


@check("top_level_reexports")
def _():
    import lovia
    import lovia.messages as mm

    return [
        lovia.Message is mm.Message,
        lovia.user is mm.user,
        lovia.system is mm.system,
        lovia.assistant is mm.assistant,
        lovia.Usage is mm.Usage,
    ]


@check("user_with_parts")
def _():
    from lovia import TextPart, user

    m = user([TextPart("look")])
    m2 = user(TextPart("single"))
    return [
        type(m.content).__name__,
        [type(p).__name__ for p in m.content],
        type(m2.content).__name__,
    ]


print(json.dumps(RESULTS, sort_keys=True))
