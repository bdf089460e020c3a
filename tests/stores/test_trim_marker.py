"""What ``trim_tool_results`` leaves in a trimmed output, on every backend: the kept start,
then a marker that says how much was cut and names ``recall_tool_result("<ref>")``, the
output's content digest (0.9.119 names the call id, which later runs may reuse); an output
its marker would not make shorter stays as it is."""

from __future__ import annotations

import re
from typing import Any

from lovia import InputEntry, ToolCallEntry, ToolResultEntry
from lovia.context import content_digest
from lovia.parts import ImagePart


def run_with_result(call_id: str, output: str, **extra: Any) -> list[Any]:
    return [
        InputEntry(role="user", content="read it"),
        ToolCallEntry(call_id=call_id, name="read", arguments="{}"),
        ToolResultEntry(call_id=call_id, output=output, **extra),
    ]


async def test_the_marker_counts_the_cut_and_names_the_recall_call(session: Any) -> None:
    await session.append("s", run_with_result("call-7", "r" * 5_000), run_id="r1")
    await session.append("s", [InputEntry(role="user", content="next")], run_id="r2")
    assert await session.trim_tool_results("s", keep_chars=400, keep_runs=1) == 1
    out = (await session.load("s"))[2].output
    assert out.startswith("r" * 400) and not out[400:].startswith("r")
    assert "trimmed 4600 of 5000 characters" in out
    assert f'recall_tool_result("{content_digest("r" * 5_000)}")' in out


async def test_a_reused_call_id_gets_a_reference_per_output(session: Any) -> None:
    """Providers that number calls per turn reuse ids across runs: each trimmed output's
    marker names its own content, and equal outputs name the same reference."""
    outputs = ["a" * 2_000, "b" * 2_000, "a" * 2_000]
    for n, output in enumerate(outputs):
        await session.append("s", run_with_result("call_0", output), run_id=f"r{n}")
    await session.append("s", [InputEntry(role="user", content="next")], run_id="last")
    assert await session.trim_tool_results("s", keep_chars=10, keep_runs=1) == 3
    trimmed = [e.output for e in await session.load("s") if isinstance(e, ToolResultEntry)]
    refs = [re.findall(r'recall_tool_result\("([^"]+)"\)', o) for o in trimmed]
    assert refs == [[content_digest(o)] for o in outputs]
    assert refs[0] == refs[2] != refs[1]


async def test_outputs_older_versions_trimmed_are_not_trimmed_again(session: Any) -> None:
    """A marker naming a call id (written before this version) or lovia 0.9.119's marker
    counts as trimmed: a trim leaves the output as it is."""
    old = [
        "r" * 400 + '\n[lovia: trimmed 4600 of 5000 characters; recall_tool_result("c1") '
        "returns the whole output if a result store archived it]",
        "r" * 400 + "\n[... 4,600 chars trimmed from stored history; "
        'recall_tool_result("c2") returns the full output only if it was archived to a '
        "result store]",
    ]
    for n, output in enumerate(old):
        await session.append("s", run_with_result(f"c{n + 1}", output), run_id=f"r{n}")
    await session.append("s", [InputEntry(role="user", content="next")], run_id="last")
    assert await session.trim_tool_results("s", keep_chars=100, keep_runs=1) == 0
    assert [e.output for e in await session.load("s") if isinstance(e, ToolResultEntry)] == old


async def test_an_output_the_marker_would_not_shorten_is_left_alone(session: Any) -> None:
    await session.append("s", run_with_result("c1", "r" * 450), run_id="r1")
    await session.append("s", run_with_result("c2", "r" * 2_000), run_id="r2")
    await session.append("s", [InputEntry(role="user", content="next")], run_id="r3")
    assert await session.trim_tool_results("s", keep_chars=400, keep_runs=1) == 1
    outputs = [e.output for e in await session.load("s") if isinstance(e, ToolResultEntry)]
    assert outputs[0] == "r" * 450
    assert len(outputs[1]) < 2_000 and outputs[1].startswith("r" * 400)
    assert await session.trim_tool_results("s", keep_chars=400, keep_runs=1) == 0


async def test_a_trimmed_result_drops_its_structured_value_and_images(session: Any) -> None:
    image = ImagePart(data="aGVsbG8=", mime_type="image/png")
    entries = run_with_result("c1", "r" * 2_000, raw={"rows": list(range(100))}, parts=[image])
    await session.append("s", entries, run_id="r1")
    await session.append("s", [InputEntry(role="user", content="next")], run_id="r2")
    assert await session.trim_tool_results("s", keep_chars=100, keep_runs=1) == 1
    trimmed = (await session.load("s"))[2]
    assert isinstance(trimmed, ToolResultEntry) and trimmed.call_id == "c1"
    assert (trimmed.raw, trimmed.parts) == (None, None)
