"""The stage API of the context policy: stages, render_view, custom stages and the summary."""

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


import re

from lovia import Agent, InMemorySession, Runner, events
from lovia.context import (
    REQUIRED_SECTIONS,
    SUMMARY_SYSTEM_PROMPT,
    SUMMARY_WRAPPER,
    ClearToolResults,
    Compaction,
    CompactionState,
    InMemoryResultStore,
    OffloadToolResults,
    StageContext,
    SummarizeHistory,
    render_view,
)
from lovia.transcript import (
    FinishDelta,
    InputEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    ToolResultEntry,
)

BIG = "alpha beta gamma " * 600  # about 10,000 characters


class Recorder:
    """A user's provider: remembers every view; optionally recalls the first reference."""

    name = "recorder"
    model = None
    supports_json_schema = False

    def __init__(self, recall=False):
        self.calls = []
        self.recall = recall

    async def stream(self, entries, *, tools=None, response_format=None, settings=None):
        self.calls.append(list(entries))
        if self.recall and len(self.calls) == 1:
            text = " ".join(e.output for e in entries if e.type == "tool_result")
            ref = re.search(r'recall_tool_result\("([^"]+)"\)', text).group(1)
            args = json.dumps({"ref": ref})
            yield ToolCallDelta(index=0, call_id="r1", name="recall_tool_result", arguments=args)
            yield FinishDelta(reason="tool_calls")
        else:
            yield TextDelta(text="done")
            yield FinishDelta(reason="stop")


def history(n, size=10_200):
    out = []
    for i in range(n):
        out.append(ToolCallEntry(call_id=f"c{i}", name="fetch", arguments="{}"))
        out.append(ToolResultEntry(call_id=f"c{i}", output=(BIG * 2)[:size]))
    return out


async def run(policy, entries, provider=None, prompt="go on"):
    provider = provider or Recorder()
    session = InMemorySession()
    await session.append("s", entries)
    agent = Agent(name="a", instructions="be brief", model=provider)
    handle = Runner.stream(agent, prompt, context_policy=policy, session=session, session_id="s")
    notices = []
    async for ev in handle:
        if isinstance(ev, events.ContextCompacted):
            notices.append(ev.notice)
    result = await handle
    stored = await session.load("s")
    return provider, notices, result, stored


def shown(provider, call=0):
    """Per tool result of one view: its call id and whether it was shown whole."""
    return [
        [e.call_id, len(e.output) >= 1_000] for e in provider.calls[call] if e.type == "tool_result"
    ]


@check("surface")
def _():
    return {
        "sections": list(REQUIRED_SECTIONS),
        "wrapper_has_slot": "{summary}" in SUMMARY_WRAPPER,
        "prompt_is_text": len(SUMMARY_SYSTEM_PROMPT) > 100,
        "stage_names": [
            OffloadToolResults().name,
            ClearToolResults().name,
            SummarizeHistory().name,
        ],
    }


@check("validation")
def _():
    outcomes = {}
    for label, make in [
        ("offload_min_chars", lambda: OffloadToolResults(min_chars=0)),
        ("offload_keep_last", lambda: OffloadToolResults(keep_last=-1)),
        ("clear_keep_last", lambda: ClearToolResults(keep_last=-1)),
        ("clear_min_chars", lambda: ClearToolResults(min_chars=-1)),
        ("summary_ratio", lambda: SummarizeHistory(min_savings_ratio=1.0)),
        ("summary_failures", lambda: SummarizeHistory(max_failures=0)),
    ]:
        try:
            make()
            outcomes[label] = "accepted"
        except ValueError:
            outcomes[label] = "ValueError"
    return outcomes


@check("render_view")
def _():
    entries = [
        InputEntry(role="system", content="sys"),
        InputEntry(role="user", content="hi"),
        ToolCallEntry(call_id="c1", name="fetch", arguments="{}"),
        ToolResultEntry(call_id="c1", output="x" * 900, is_error=True),
        ToolCallEntry(call_id="c2", name="fetch", arguments="{}"),
        ToolResultEntry(call_id="c2", output="y" * 900),
    ]
    plain = render_view(entries, CompactionState())
    view = render_view(entries, CompactionState(cleared={"c1"}))
    marker = view[3]
    return {
        "empty_state_same_objects": all(a is b for a, b in zip(plain, entries, strict=True)),
        "new_list": plain is not entries,
        "marker": [
            marker.call_id,
            marker.is_error,
            len(marker.output) < 300,
            'recall_tool_result("' in marker.output,
        ],
        "others_untouched": [view[i] is entries[i] for i in (0, 1, 2, 4, 5)],
        "transcript_untouched": entries[3].output == "x" * 900,
    }


@check("clear_stage")
def _():
    async def main():
        policy = Compaction(
            context_window=8_000, reserve_output_tokens=0, stages=[ClearToolResults(keep_last=1)]
        )
        provider, notices, result, stored = await run(policy, history(4))
        return {
            "shown": shown(provider),
            "reasons": [n.reason for n in notices],
            "reactive": [n.reactive for n in notices],
            "shrank": [n.tokens_after < n.tokens_before for n in notices],
            "session_whole": [len(e.output) for e in stored if e.type == "tool_result"],
            "output": result.output,
        }

    return main()


@check("offload_and_recall")
def _():
    async def main():
        store = InMemoryResultStore()
        policy = Compaction(
            context_window=8_000,
            reserve_output_tokens=0,
            store=store,
            stages=[OffloadToolResults(min_chars=1_000, keep_last=1)],
        )
        provider, notices, result, stored = await run(policy, history(3), Recorder(recall=True))
        recalled = [e.output for e in stored if e.type == "tool_result" and e.call_id == "r1"]
        return {
            "shown": shown(provider),
            "reasons": [n.reason for n in notices],
            "recalled_whole": recalled == [BIG],
            "output": result.output,
        }

    return main()


@check("custom_stage")
def _():
    seen = {}

    class ClearEverything:
        name = "clear_everything"

        async def plan(self, body, ctx):
            seen["ctx"] = isinstance(ctx, StageContext)
            seen["aggressive"] = ctx.aggressive
            seen["over_target"] = ctx.current_tokens > ctx.budget.target_tokens
            seen["body_has_system"] = any(e.type == "input" and e.role == "system" for e in body)
            new = False
            for e in body:
                if e.type == "tool_result" and e.call_id not in ctx.state.cleared:
                    ctx.state.cleared.add(e.call_id)
                    new = True
            return new

    async def main():
        policy = Compaction(
            context_window=8_000, reserve_output_tokens=0, stages=[ClearEverything()]
        )
        provider, notices, _, _ = await run(policy, history(4))
        return {"seen": seen, "shown": shown(provider), "reasons": [n.reason for n in notices]}

    return main()


@check("summary_stage")
def _():
    class Writer:
        def __init__(self):
            self.spans = []

        async def summarize(self, entries, *, req, prior_summary=None):
            self.spans.append(len(entries))
            return "SUMMARY-OF-THE-EARLY-TALK"

    async def main():
        writer = Writer()
        policy = Compaction(
            context_window=4_000,
            reserve_output_tokens=0,
            stages=[SummarizeHistory(summarizer=writer)],
        )
        talk = []
        for i in range(40):
            talk.append(InputEntry(role="user", content=f"question {i} " + "q" * 400))
        provider, notices, _, stored = await run(policy, talk)
        view = provider.calls[0]
        text = [e.type == "input" and "SUMMARY-OF-THE-EARLY-TALK" in e.content for e in view]
        return {
            "summarized": len(writer.spans) > 0,
            "summary_second_in_view": text.index(True) if True in text else None,
            "view_shorter": len(view) < len(talk) + 2,
            "last_prompt_kept": view[-1].content == "go on",
            "notice_summary": [n.summary for n in notices],
            "reasons": [n.reason for n in notices],
            "session_whole": len(stored) == len(talk) + 2,
        }

    return main()


print(json.dumps(RESULTS, sort_keys=True))
