"""The Todo plugin: the model keeps a checklist with todo_write and sees it every turn; the
list lives in the transcript, so a handoff target, a later run of the session and a run
resumed after a SIGKILL all find it as it was."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from lovia import Agent, InMemorySession, Runner, Todo, events
from lovia.messages import Message
from lovia.plugins import TodoItem, TodoList, render_todos, todos_from_entries
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import ToolCallEntry

PLAN = {
    "todos": [
        {"content": "Read the spec", "status": "in_progress", "active_form": "Reading the spec"},
        {"content": "Write the code", "status": "in_progress"},
        {"content": "Ship it"},
    ]
}


def reminders(turn: list[Message]) -> list[str]:
    return [m.text for m in turn if m.role == "user" and "<system-reminder>" in m.text]


def test_a_new_list_replaces_the_old_one_and_keeps_one_step_in_progress() -> None:
    store = TodoList()
    mine = [TodoItem.model_validate(i) for i in PLAN["todos"]]
    returned = store.replace(mine)
    assert [t.status for t in store.items] == ["in_progress", "pending", "pending"]
    assert mine[1].status == "in_progress"  # the caller's items are not changed
    returned.clear()
    assert len(store.items) == 3  # nor is the store through the returned list
    store.replace([TodoItem(content="only this")])
    assert [t.content for t in store.items] == ["only this"]


def test_the_rendered_list_shows_boxes_and_the_active_form() -> None:
    items = [
        TodoItem(content="a", status="completed"),
        TodoItem(content="b", status="in_progress", active_form="doing b"),
        TodoItem(content="c"),
    ]
    assert render_todos(items) == "[x] a\n[~] doing b\n[ ] c"


def test_the_newest_valid_call_is_the_list() -> None:
    entries = [
        ToolCallEntry(call_id="1", name="todo_write", arguments=json.dumps(PLAN)),
        ToolCallEntry(call_id="2", name="todo_write", arguments="{not json"),
        ToolCallEntry(call_id="3", name="todo_write", arguments='{"todos": [{"status": 1}]}'),
        ToolCallEntry(call_id="4", name="other", arguments='{"todos": []}'),
    ]
    assert [t.content for t in todos_from_entries(entries)] == [
        "Read the spec",
        "Write the code",
        "Ship it",
    ]
    assert todos_from_entries(entries, tool_name="plan") == []


async def test_the_list_is_shown_every_turn_and_never_stored() -> None:
    model = ScriptedProvider([call("todo_write", PLAN), text("done")])
    agent = Agent(name="t", model=model, plugins=[Todo()])
    seen: list[object] = []
    handle = Runner.stream(agent, "build it")
    async for event in handle:
        if isinstance(event, events.ToolCallCompleted):
            seen.append(event.result)
    result = await handle.result()
    assert reminders(model.calls[0]) == []
    [reminder] = reminders(model.calls[1])
    assert "[~] Reading the spec\n[ ] Write the code\n[ ] Ship it" in reminder
    assert "todo_write" in model.calls[0][0].text  # the usage guidance
    assert not any("<system-reminder>" in str(getattr(e, "content", "")) for e in result.entries)
    [items] = seen
    assert isinstance(items, list) and all(isinstance(i, TodoItem) for i in items)
    [stored] = [e for e in result.entries if e.type == "tool_result"]
    assert stored.raw[0]["content"] == "Read the spec"  # the list as JSON in the record


async def test_a_later_run_of_the_session_finds_the_list() -> None:
    session = InMemorySession()
    first = Agent(name="t", model=ScriptedProvider([call("todo_write", PLAN), text("ok")]))
    await Runner.run(first.clone(plugins=[Todo()]), "plan", session=session, session_id="s")
    model = ScriptedProvider([text("continuing")])
    await Runner.run(
        Agent(name="t", model=model, plugins=[Todo()]), "go on", session=session, session_id="s"
    )
    [reminder] = reminders(model.calls[0])
    assert "Reading the spec" in reminder


async def test_inject_false_and_no_instructions_leave_only_the_tool() -> None:
    model = ScriptedProvider([call("todo_write", PLAN), text("done")])
    agent = Agent(name="t", model=model, plugins=[Todo(inject=False, instructions=None)])
    await Runner.run(agent, "go")
    assert all(reminders(turn) == [] for turn in model.calls)
    assert not any(m.role == "system" for m in model.calls[0])
    # the context policy's recall comes with any tool, a plugin's too (as in 0.9.119)
    assert [t["function"]["name"] for t in model.tools[0]] == ["todo_write", "recall_tool_result"]


async def test_a_renamed_tool_is_the_one_read_back() -> None:
    model = ScriptedProvider([call("plan", PLAN), text("done")])
    await Runner.run(Agent(name="t", model=model, plugins=[Todo(tool_name="plan")]), "go")
    assert "Reading the spec" in reminders(model.calls[1])[0]
    assert "`plan`" in model.calls[0][0].text


WORKER = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys
    from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, Todo, tool
    from lovia.testing import ScriptedProvider, call, text

    state = sys.argv[1]
    PLAN = json.loads(sys.argv[2])

    @tool
    def work() -> str:
        '''Do the step.'''
        if not os.path.exists(state + "/crashed"):
            open(state + "/crashed", "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return "worked"

    def model(messages):
        with open(state + "/views.jsonl", "a") as out:
            out.write(json.dumps([m.text for m in messages if m.role == "user"]) + "\\n")
        if not any(m.role == "tool" for m in messages):
            return call("todo_write", PLAN)
        if sum(m.role == "tool" for m in messages) == 1:
            return call("work", {})
        return text("finished")

    async def main():
        cp = SQLiteCheckpointer(state + "/runs.db")
        agent = Agent(name="t", model=ScriptedProvider([model] * 3), tools=[work], plugins=[Todo()])
        result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "job-1"))
        print(result.output)
        await cp.close()

    asyncio.run(main())
    """
)


def test_a_run_resumed_after_sigkill_shows_its_list_as_it_was(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    args = [sys.executable, str(script), str(tmp_path), json.dumps(PLAN)]
    crashed = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert crashed.returncode == -9, crashed.stderr
    resumed = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "finished"
    views = [json.loads(line) for line in (tmp_path / "views.jsonl").read_text().splitlines()]
    # first process: the plan, then the call it died in; second process: the resumed turn
    assert len(views) == 3
    last = views[-1]
    assert any("[~] Reading the spec" in m for m in last if "<system-reminder>" in m)
