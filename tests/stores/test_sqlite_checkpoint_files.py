"""Persisted formats are versioned: a frozen file written by checkpoint schema version 1 keeps
reading, and its interrupted run still resumes through the Runner (C1, C10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    RunContext,
    Runner,
    SQLiteCheckpointer,
    ToolResultEntry,
    Usage,
    tool,
)
from lovia.testing import ScriptedProvider, text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def copy_of_v1(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    path.write_bytes((FIXTURES / "checkpoints-v1.sqlite").read_bytes())
    return path


async def test_a_file_written_by_schema_version_1_still_reads(tmp_path: Path) -> None:
    async with SQLiteCheckpointer(copy_of_v1(tmp_path)) as cp:
        done = await cp.load("job-1")
        assert done is not None
        assert [e.type for e in done.entries] == [
            "input",
            "reasoning",
            "tool_call",
            "tool_result",
            "assistant_text",
        ]
        assert done.status == "completed" and done.output == "Revenue grew 12% in Q3."
        u = Usage(input_tokens=120, output_tokens=30, cache_read_tokens=5, cache_write_tokens=2)
        assert (done.usage, done.turns) == (u + u, 2)
        assert (done.context_state, done.session_id) == ({"carried": 1}, "u1")
        waiting = await cp.load("job-2")
        assert waiting is not None
        assert waiting.status == "interrupted" and waiting.started_calls == ("call_send",)
        assert [r.run_id for r in await cp.list_runs()] == ["job-2", "job-1"]


async def test_an_interrupted_run_in_a_version_1_file_resumes(tmp_path: Path) -> None:
    sent: list[str] = []

    @tool
    def send(ctx: RunContext[Any], to: str) -> str:
        """Send the invoice."""
        sent.append(to)
        return f"sent to {to}"

    model = ScriptedProvider([text("Invoice sent.")])
    agent = Agent(name="billing", model=model, tools=[send])
    async with SQLiteCheckpointer(copy_of_v1(tmp_path)) as cp:
        result = await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "job-2"))
        assert result.output == "Invoice sent." and sent == ["ada"]
        assert [e.output for e in result.entries if isinstance(e, ToolResultEntry)] == [
            "sent to ada"
        ]
        replayed = await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "job-1"))
        assert replayed.output == "Revenue grew 12% in Q3." and len(model.calls) == 1
