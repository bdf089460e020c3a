"""Tracing through real runs: ``Runner.run(..., tracer=...)``.

These need the run loop to take ``tracer=``; until it does they are skipped.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, Runner, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.tracing import InMemoryTracer

CHILD = Path(__file__).with_name("traced_child.py")


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_a_run_opens_the_0_9_119_spans_with_their_keys() -> None:
    tracer = InMemoryTracer()
    model = ScriptedProvider([call("add", {"a": 1, "b": 2}, call_id="c1"), text("3")])
    agent = Agent(name="calc", model=model, tools=[add])
    result = await Runner.run(  # type: ignore[call-arg]
        agent, "1 + 2?", tracer=tracer, checkpoint=CheckpointOptions(InMemoryCheckpointer(), "r1")
    )
    assert result.output == "3"
    assert [s.name for s in tracer.spans] == ["run", "model_call", "tool_call", "model_call"]
    (run,) = tracer.named("run")
    assert run.attrs["agent"] == "calc" and run.attrs["run_id"] == "r1"
    assert run.attrs["turns"] == 2 and run.attrs["resumed"] is False
    assert [s.attrs["turn"] for s in tracer.named("model_call")] == [1, 2]
    (tool_span,) = tracer.named("tool_call")
    assert tool_span.attrs == {"name": "add", "call_id": "c1"}
    assert all(s.parent is run for s in tracer.spans[1:])
    saves = [e for s in tracer.spans for e in s.events if e[0] == "checkpoint_save"]
    assert saves and saves[-1][1]["status"] == "completed"


def run_child(tmp_path: Path, kill: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(tmp_path / "app.db"), str(tmp_path / "spans.jsonl"), kill],
        capture_output=True,
        text=True,
        timeout=120,
    )


def spans_of(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "spans.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_a_resumed_run_links_to_the_trace_of_the_worker_that_crashed(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    crashed = run_child(tmp_path, "yes")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    first = spans_of(tmp_path)
    # the crashed worker's run span never ended; its finished children name its trace
    assert first and all(s["name"] != "invoke_agent worker" for s in first)
    crashed_trace = {s["trace_id"] for s in first}
    assert len(crashed_trace) == 1

    resumed = run_child(tmp_path, "no")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "finished 2 units"
    second = [s for s in spans_of(tmp_path) if s["pid"] != first[0]["pid"]]
    (run,) = [s for s in second if s["name"] == "invoke_agent worker"]
    assert run["attributes"]["lovia.resumed"] is True
    assert run["attributes"]["lovia.run_id"] == "job-1"
    assert run["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    (link,) = run["links"]
    assert link["trace_id"] in crashed_trace
    assert link["span_id"] in {s["parent"] for s in first}  # the crashed run span itself
    assert link["attributes"] == {"lovia.link.type": "resumes"}
    assert run["trace_id"] not in crashed_trace
    assert "lovia.checkpoint.save" in run["events"]
    tools = [s for s in second if s["name"] == "execute_tool work"]
    assert [t["attributes"]["gen_ai.tool.call.id"] for t in tools] == ["call_2"]
