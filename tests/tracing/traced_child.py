"""A worker process for the traced crash test: one checkpointed run, traced with
OpenTelemetryTracer, every finished span appended to SPANS as a JSON line. With KILL=yes the
process kills itself with SIGKILL inside the second tool call.

    python traced_child.py DB SPANS KILL
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, tool
from lovia.testing import ScriptedProvider, ScriptedTurn, call, text
from lovia.tracing import OpenTelemetryTracer

DB, SPANS, KILL = sys.argv[1:4]


class FileExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(SPANS, "a") as f:
            for s in spans:
                assert s.context is not None
                record = {
                    "name": s.name,
                    "pid": os.getpid(),
                    "trace_id": f"{s.context.trace_id:032x}",
                    "span_id": f"{s.context.span_id:016x}",
                    "parent": None if s.parent is None else f"{s.parent.span_id:016x}",
                    "attributes": dict(s.attributes or {}),
                    "events": [e.name for e in s.events],
                    "links": [
                        {
                            "trace_id": f"{link.context.trace_id:032x}",
                            "span_id": f"{link.context.span_id:016x}",
                            "attributes": dict(link.attributes or {}),
                        }
                        for link in s.links
                    ],
                }
                f.write(json.dumps(record, default=list) + "\n")
        return SpanExportResult.SUCCESS


@tool
def work(n: int) -> str:
    """Do unit of work n."""
    if KILL == "yes" and n == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return f"work {n} done"


def model(messages: list[dict[str, Any]]) -> ScriptedTurn:
    done = sum(1 for m in messages if m.role == "tool")
    if done < 2:
        return call("work", {"n": done + 1}, call_id=f"call_{done + 1}")
    return text(f"finished {done} units")


async def main() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
    agent = Agent(name="worker", model=ScriptedProvider([model] * 5), tools=[work])
    async with SQLiteCheckpointer(DB) as cp:
        result = await Runner.run(  # type: ignore[call-arg]
            agent,
            "do two units of work",
            checkpoint=CheckpointOptions(cp, "job-1"),
            tracer=OpenTelemetryTracer(provider),
        )
    print(json.dumps({"output": result.output}))


asyncio.run(main())
