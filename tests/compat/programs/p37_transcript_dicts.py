"""Transcript entries as dicts: round trips, 0.9.119's own dicts, unknown fields, dangling calls."""

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


from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    drop_dangling_tool_calls,
    entry_from_dict,
    entry_to_dict,
)


@check("to_dict")
def _():
    return [
        entry_to_dict(InputEntry(role="user", content="hi")),
        entry_to_dict(AssistantTextEntry(content="yo")),
        entry_to_dict(ReasoningEntry(content="hmm")),
        entry_to_dict(ToolCallEntry(call_id="c1", name="f", arguments='{"a": 1}')),
        entry_to_dict(ToolResultEntry(call_id="c1", output="1", raw={"n": 1})),
        entry_to_dict(ToolResultEntry(call_id="c2", output="err", is_error=True)),
    ]


@check("from_0_9_119_dicts")
def _():
    dicts = [
        {"type": "input", "role": "user", "content": "hi"},
        {"type": "assistant_text", "content": "yo", "id": None},
        {"type": "reasoning", "content": "hmm", "id": None, "provider": "scripted", "metadata": {}},
        {"type": "tool_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {
            "type": "tool_result",
            "call_id": "c1",
            "output": "1",
            "raw": None,
            "is_error": False,
            "parts": None,
        },
        {"type": "tool_result", "call_id": "c2", "output": "2", "raw": 2, "is_error": False},
        {"type": "input", "role": "user", "content": "x", "future_field": 1},
    ]
    out = []
    for d in dicts:
        try:
            e = entry_from_dict(d)
            out.append([type(e).__name__, entry_to_dict(e)])
        except Exception as exc:
            out.append(["raised", type(exc).__name__])
    return out


@check("unknown_type")
def _():
    try:
        entry_from_dict({"type": "nope"})
        return "accepted"
    except ValueError as exc:
        return ["ValueError", "Unknown entry type" in str(exc)]


@check("parts_roundtrip")
def _():
    from lovia import ImagePart, TextPart

    e = InputEntry(
        role="user", content=[TextPart("look"), ImagePart(url="https://example.com/a.png")]
    )
    d = entry_to_dict(e)
    back = entry_from_dict(d)
    return [d, [type(p).__name__ for p in back.content]]


@check("drop_dangling")
def _():
    entries = [
        InputEntry(role="user", content="go"),
        ToolCallEntry(call_id="a", name="f", arguments="{}"),
        ToolCallEntry(call_id="b", name="f", arguments="{}"),
        ToolResultEntry(call_id="a", output="ok"),
    ]
    kept = drop_dangling_tool_calls(entries)
    from_tuple = drop_dangling_tool_calls(tuple(entries))
    return [[getattr(e, "call_id", None) for e in kept], type(kept).__name__, len(from_tuple)]


@check("drop_dangling_generator")
def _():
    entries = [
        ToolCallEntry(call_id="a", name="f", arguments="{}"),
        ToolResultEntry(call_id="a", output="ok"),
        InputEntry(role="user", content="next"),
    ]
    return len(drop_dangling_tool_calls(e for e in entries))


@check("drop_dangling_reused_call_id")
def _():
    entries = [
        ToolCallEntry(call_id="a", name="f", arguments="{}"),
        ToolResultEntry(call_id="a", output="ok"),
        ToolCallEntry(call_id="a", name="f", arguments="{}"),
    ]
    return [e.type for e in drop_dangling_tool_calls(entries)]


@check("defaults")
def _():
    r = ToolResultEntry(call_id="c", output="o")
    a = AssistantTextEntry(content="x")
    return [
        r.raw,
        r.is_error,
        r.parts,
        r.type,
        a.id,
        a.type,
        InputEntry(role="system", content="s").type,
    ]


print(json.dumps(RESULTS, sort_keys=True))
