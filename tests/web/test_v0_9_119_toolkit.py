"""0.9.119's public web toolkit behaviour that its own tests check behind private imports
(compat): the ``Scheduling`` plugin's tools run in an agent (their hints resolve), take
``expires_at`` and ``reason`` and answer refusals in words; follow-up suggestions are
coerced, parsed and asked for as 0.9.119 did."""

from __future__ import annotations

from typing import Any

from lovia import Agent, InMemorySession, Runner
from lovia.messages import Message
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import ToolResultEntry
from lovia.web import ChatStore, create_app
from lovia.web.followups import (
    FollowupRequest,
    coerce_suggestions,
    generate_followups,
    parse_followups,
)
from lovia.web.scheduling import Scheduling

from .conftest import make_client


async def _run_tools(store: ChatStore, *calls: tuple[str, dict[str, Any]]) -> list[str]:
    """Each call's result text, from one run of an agent with the plugin (the model's calls
    approved by the agent's handler)."""
    script = [call(name, args, call_id=f"c{i}") for i, (name, args) in enumerate(calls)]
    agent = Agent(
        name="bot",
        model=ScriptedProvider([*script, text("done")]),
        plugins=[Scheduling(store)],
        approval_handler=lambda ctx, request: True,
    )
    result = await Runner.run(agent, "go", session=InMemorySession(), session_id="chat-1")
    return [e.output for e in result.entries if isinstance(e, ToolResultEntry)]


async def test_the_scheduling_plugin_sets_up_and_its_tools_run_in_an_agent() -> None:
    store = ChatStore.in_memory()
    (out,) = await _run_tools(
        store,
        (
            "schedule_run",
            {
                "instruction": "check the log",
                "trigger_kind": "every",
                "trigger_expr": "60",
                "until": "it says ready",
                "expires_at": "2033-05-18T03:33",
            },
        ),
    )
    assert "stops when" in out
    (row,) = await store.list_schedules()
    assert row.until == "it says ready" and row.max_fires is None
    assert row.expires_at is not None and row.expires_at > 1_900_000_000
    assert row.session_id == "chat-1" and row.agent == "bot"


async def test_an_at_time_is_stored_as_epoch_seconds() -> None:
    store = ChatStore.in_memory()
    await _run_tools(
        store,
        ("schedule_run", {"instruction": "a", "trigger_kind": "at", "trigger_expr": "2000000000"}),
        (
            "schedule_run",
            {"instruction": "b", "trigger_kind": "at", "trigger_expr": "2033-05-18T03:33"},
        ),
    )
    rows = {r.input: r for r in await store.list_schedules()}
    assert rows["a"].trigger_expr == "2000000000"
    assert float(rows["b"].trigger_expr) > 1_900_000_000
    assert rows["b"].next_fire == float(rows["b"].trigger_expr)


async def test_schedule_refusals_are_answers_and_write_nothing() -> None:
    store = ChatStore.in_memory()
    outs = await _run_tools(
        store,
        ("schedule_run", {"instruction": "  ", "trigger_kind": "every", "trigger_expr": "60"}),
        (
            "schedule_run",
            {"instruction": "x", "trigger_kind": "every", "trigger_expr": "60", "until": "y"},
        ),
        (
            "schedule_run",
            {
                "instruction": "x",
                "trigger_kind": "at",
                "trigger_expr": "2000000000",
                "until": "y",
                "max_fires": 3,
            },
        ),
        (
            "schedule_run",
            {"instruction": "x", "trigger_kind": "every", "trigger_expr": "60", "max_fires": 0},
        ),
        (
            "schedule_run",
            {
                "instruction": "x",
                "trigger_kind": "every",
                "trigger_expr": "60",
                "expires_at": "whenever",
            },
        ),
        ("schedule_run", {"instruction": "x", "trigger_kind": "every", "trigger_expr": "0"}),
    )
    empty, no_net, one_shot, fires, expires, interval = outs
    assert "empty" in empty
    assert "safety net" in no_net
    assert "repeating" in one_shot
    assert "max_fires" in fires
    assert "expires_at" in expires
    assert "couldn't schedule" in interval.lower()
    assert await store.list_schedules() == []


async def test_cancel_keeps_its_reason_and_list_shows_it() -> None:
    store = ChatStore.in_memory()
    (none_yet,) = await _run_tools(store, ("list_schedules", {}))
    assert "No schedules" in none_yet
    await _run_tools(
        store,
        (
            "schedule_run",
            {
                "instruction": "water",
                "trigger_kind": "every",
                "trigger_expr": "300",
                "max_fires": 5,
            },
        ),
    )
    (row,) = await store.list_schedules()
    stopped, again, unknown, listed = await _run_tools(
        store,
        ("cancel_schedule", {"schedule_id": row.id, "reason": "user asked"}),
        ("cancel_schedule", {"schedule_id": row.id, "reason": "again"}),
        ("cancel_schedule", {"schedule_id": "nope"}),
        ("list_schedules", {}),
    )
    assert "stopped" in stopped and "already inactive" in again
    assert "list_schedules" in unknown
    after = await store.get_schedule(row.id)
    assert after is not None and not after.active and after.finished_reason == "user asked"
    assert row.id in listed and "0/5" in listed and "done (user asked)" in listed


def test_parse_followups_strips_marks_and_quotes_and_cuts_long_lines() -> None:
    assert parse_followups("• A?\n— B?") == ["A?", "B?"]
    assert parse_followups('"A?"\n`B?`') == ["A?", "B?"]
    assert parse_followups("A?\nB?", limit=0) == []
    (line,) = parse_followups("x" * 500)
    assert len(line) == 120


def test_coerce_suggestions() -> None:
    assert coerce_suggestions("A?") == ["A?"]
    assert coerce_suggestions([1, None, "  q?  ", ""]) == ["1", "None", "q?"]
    assert coerce_suggestions(("A?",)) == ["A?"]
    assert coerce_suggestions(None) == [] and coerce_suggestions(123) == []


def _request(*messages: tuple[str, str]) -> FollowupRequest:
    return FollowupRequest(
        session_id="s1", agent="bot", messages=[Message(role=r, content=c) for r, c in messages]
    )


async def test_generate_followups_asks_about_the_last_exchange_only() -> None:
    unanswered = ScriptedProvider([text("unused")])
    assert await generate_followups(_request(("user", "hi")), model=unanswered) == []
    assert unanswered.calls == []

    failing = ScriptedProvider([])
    assert (
        await generate_followups(_request(("user", "q"), ("assistant", "r")), model=failing) == []
    )

    provider = ScriptedProvider([text("A?")])
    long = _request(
        ("user", "old"), ("assistant", "older"), ("user", "q" * 5000), ("assistant", "r" * 9000)
    )
    assert await generate_followups(long, model=provider) == ["A?"]
    prompt = provider.calls[0][-1].text
    assert "…" in prompt and len(prompt) < 2200 and "older" not in prompt


async def test_a_suggesters_answer_is_coerced_over_http() -> None:
    async def sloppy(request: FollowupRequest) -> Any:
        return [1, None, "  real question?  ", ""]

    async def one(request: FollowupRequest) -> Any:
        return "Tell me more"

    for suggester, chips in ((sloppy, ["1", "None", "real question?"]), (one, ["Tell me more"])):
        agent = Agent(name="bot", model=ScriptedProvider([text("Paris.")]))
        app = create_app(agent, titles=False, followups=suggester)
        async with make_client(app) as c:
            sid = (await c.post("/api/chat", json={"message": "capital?"})).json()["session_id"]
            res = await c.post(f"/api/sessions/{sid}/followups")
            assert res.status_code == 200
            assert res.json() == {"followups": chips}


async def test_generate_title_takes_0_9_119s_form() -> None:
    from lovia.web.titles import generate_title

    named = ScriptedProvider([text('"Title: Debugging A Memory Leak."')])
    assert await generate_title("why?", "look", model=named) == "Debugging A Memory Leak"
    blank = ScriptedProvider([text("unused")])
    assert await generate_title("", None, model=blank) == "New chat"
    assert blank.calls == []
    failing = ScriptedProvider([])
    assert await generate_title("hello there friend", "hi", model=failing) == "hello there friend"
    # this project's form is unchanged: (model, message) -> the title or None
    assert (
        await generate_title(ScriptedProvider([text("Trip Plans")]), "plan a trip") == "Trip Plans"
    )


async def test_a_schedule_api_refuses_blank_input_and_takes_a_past_at_time() -> None:
    app = create_app(Agent(name="bot", model=ScriptedProvider([])), titles=False)
    async with make_client(app) as c:
        spec = {"input": "   ", "trigger_kind": "every", "trigger_expr": "60"}
        assert (await c.post("/api/schedules", json=spec)).status_code == 422
        past = {"input": "x", "trigger_kind": "at", "trigger_expr": "1700000000"}
        made = await c.post("/api/schedules", json=past)
        assert made.status_code == 200, made.text
        # due at once, as in 0.9.119 (a time just past, such as now, is the common case)
        assert made.json()["next_fire"] == 1_700_000_000
        edit = await c.patch(f"/api/schedules/{made.json()['id']}", json={"input": " "})
        assert edit.status_code == 422


async def test_mark_fired_never_resurrects_a_stopped_schedule() -> None:
    from lovia.web.store import ScheduleRow

    store = ChatStore.in_memory()
    now = 1000.0
    row = ScheduleRow(
        id="a",
        agent="bot",
        input="do it",
        session_id=None,
        trigger_kind="every",
        trigger_expr="3600",
        next_fire=now,
        active=True,
        last_session_id=None,
        created_at=now,
        updated_at=now,
        max_fires=3,
    )
    await store.add_schedule(row)
    await store.mark_fired("a", next_fire=now + 60, active=True, last_session_id="s1")
    fired = await store.get_schedule("a")
    assert fired is not None and fired.active and fired.fire_count == 1
    await store.set_schedule_active("a", active=False, finished_reason="condition met")
    await store.mark_fired("a", next_fire=now + 120, active=True, last_session_id="s2")
    after = await store.get_schedule("a")
    assert after is not None and not after.active
    assert after.finished_reason == "condition met" and after.fire_count == 2


async def _asked(channel: Any, registry: Any, act: Any) -> str:
    """The ask_human result of a run whose question ``act(registry)`` settles."""
    import asyncio

    from lovia.tools import ask_human

    agent = Agent(
        name="bot",
        model=ScriptedProvider([call("ask_human", {"question": "anyone?"}), text("ok")]),
        tools=[ask_human(channel)],
    )
    run = asyncio.ensure_future(
        Runner.run(agent, "go", session=InMemorySession(), session_id="chat-1")
    )
    async for _asked_now in channel.questions():  # the run has asked
        break
    await act(registry)
    result = await run
    (out,) = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    return out


async def test_question_registry_cancel_session_timeout_and_close() -> None:
    from lovia.tools import HumanChannel
    from lovia.web import QuestionRegistry

    channel = HumanChannel()
    registry = QuestionRegistry(channel)

    async def cancel(r: Any) -> None:
        r.cancel_session("chat-1")

    assert "run cancelled" in await _asked(channel, registry, cancel)

    timed = QuestionRegistry(channel, timeout=0.05)
    timed.start()

    async def wait(r: Any) -> None:
        return None

    assert "no answer within" in await _asked(channel, timed, wait)
    await timed.aclose()  # the server shuts down: the channel takes no more questions
    assert channel.pending == []

    channel = HumanChannel()
    assert "shutting down" in await _asked(channel, QuestionRegistry(channel), _close)


async def _close(registry: Any) -> None:
    await registry.aclose()


def test_the_web_modules_main_returns_its_exit_status(capsys: Any) -> None:
    import pytest

    import lovia.web.__main__ as cli

    assert cli.main(["--log-level", "bogus"]) == 2
    assert "log level" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
