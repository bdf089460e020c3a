"""Checks judge a RunResult: the matchers, composition, and run_check turning whatever a check
does (bool, CheckResult, exception) into one CheckResult."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel

from lovia import Agent, RunResult, Usage, UserValueError
from lovia.eval import (
    CheckResult,
    all_of,
    any_of,
    contains,
    equals,
    matches,
    max_tokens,
    max_turns,
    no_error,
    not_contains,
    regex,
    run_check,
    tool_called,
    tool_not_called,
    weighted,
)
from lovia.transcript import ToolCallEntry, ToolResultEntry, TranscriptEntry


def result(
    output: Any = "", entries: list[TranscriptEntry] | None = None, turns: int = 1, **usage: int
) -> RunResult:
    return RunResult(output, entries or [], Agent(name="t"), Usage(**usage), turns)


class City(BaseModel):
    name: str
    tags: list[str]


async def test_text_matchers_pass_and_say_why_they_fail() -> None:
    got = await run_check(contains("Paris"), result("Lyon is nice"))
    assert (got.name, got.passed) == ("contains('Paris')", False)
    assert "Lyon is nice" in got.reason
    assert (await run_check(contains("paris", ignore_case=True), result("PARIS"))).passed
    assert (await run_check(contains("7"), result(17))).passed  # output as text
    assert not (await run_check(not_contains("sorry"), result("so sorry"))).passed
    assert (await run_check(regex(r"^b", flags=re.M), result("a\nb"))).passed
    assert "no match" in (await run_check(regex(r"\d"), result("abc"))).reason


async def test_equals_and_matches_read_structured_output() -> None:
    city = City(name="Lisbon", tags=["sea", "hills"])
    assert (
        await run_check(equals(City(name="Lisbon", tags=["sea", "hills"])), result(city))
    ).passed
    assert (await run_check(matches({"name": "Lisbon"}), result(city))).passed
    assert not (await run_check(matches({"tags": ["sea"]}), result(city))).passed  # same length
    assert not (await run_check(matches({"mayor": "x"}), result(city))).passed
    assert not (await run_check(matches({"a": 1}), result("text"))).passed

    def short(output: Any) -> bool:
        return len(str(output)) < 5

    got = await run_check(matches(short), result("tiny"))
    assert got.passed and got.name == "matches(short)"


async def test_run_shape_checks() -> None:
    entries: list[TranscriptEntry] = [
        ToolCallEntry(call_id="1", name="search"),
        ToolResultEntry(call_id="1", output="disk full", is_error=True),
    ]
    done = result("x", entries, turns=3, input_tokens=70, output_tokens=30)
    assert (await run_check(tool_called("search"), done)).passed
    assert (await run_check(tool_called("fetch"), done)).reason == "tool was never called"
    assert not (await run_check(tool_not_called("search"), done)).passed
    assert (await run_check(max_turns(3), done)).passed
    assert "3 turns" in (await run_check(max_turns(2), done)).reason
    assert (await run_check(max_tokens(100), done)).passed
    assert not (await run_check(max_tokens(99), done)).passed
    failed = await run_check(no_error(), done)
    assert not failed.passed and "disk full" in failed.reason


async def test_any_callable_is_a_check_and_a_raising_one_fails_only_itself() -> None:
    async def cites(r: RunResult) -> bool:
        return "http" in str(r.output)

    def graded(r: RunResult) -> CheckResult:
        return CheckResult(name="graded", passed=True, score=0.25)

    def broken(r: RunResult) -> bool:
        raise KeyError("missing")

    assert (await run_check(cites, result("see http://x"))).name == "cites"
    assert (await run_check(graded, result())).score == 0.25
    failed = await run_check(broken, result())
    assert (failed.name, failed.passed) == ("broken", False)
    assert "KeyError" in failed.reason


async def test_composition() -> None:
    r = result("Paris 2026")
    failed = await run_check(all_of(contains("Paris"), contains("Rome"), name="both"), r)
    assert failed.name == "both" and "contains('Rome')" in failed.reason
    assert (await run_check(all_of(), r)).passed
    assert (await run_check(any_of(contains("Rome"), regex(r"\d+")), r)).passed
    assert (await run_check(any_of(), r)).reason == "no checks provided"

    def half(r: RunResult) -> CheckResult:
        return CheckResult(name="half", passed=False, score=0.5)

    def broken(r: RunResult) -> bool:
        raise RuntimeError

    graded = await run_check(weighted({contains("Paris"): 3.0, half: 1.0, broken: 0.0}), r)
    assert graded.score == pytest.approx(0.875) and graded.passed
    assert not (await run_check(weighted({half: 1.0}, threshold=0.6), r)).passed


@pytest.mark.parametrize(
    "weights, threshold",
    [({}, 0.5), ({"c": 0.0}, 0.5), ({"c": 1.0, "d": -1.0}, 0.5), ({"c": 1.0}, 1.1)],
)
def test_weighted_refuses_bad_weights(weights: dict[str, float], threshold: float) -> None:
    checks = {contains(k): w for k, w in weights.items()}
    with pytest.raises(UserValueError):
        weighted(checks, threshold=threshold)
