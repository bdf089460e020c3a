"""evaluate(): samples and thresholds, a model per case, timeouts and errors as sample data,
the LLM judge (scripted), reports saved atomically and compared with a baseline."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from lovia import Agent, UserError, UserValueError, tool, user
from lovia.eval import (
    Case,
    CaseResult,
    CheckResult,
    Report,
    SampleResult,
    contains,
    evaluate,
    llm_judge,
    tool_called,
)
from lovia.testing import ScriptedProvider, call, text


def says(*replies: str) -> Agent:
    return Agent(name="echo", model=ScriptedProvider([text(r) for r in replies]))


def verdict(score: float, why: str = "fine") -> str:
    return json.dumps({"score": score, "reasoning": why})


def test_a_case_is_named_after_its_input() -> None:
    assert Case("What  is\n2+2?").name == "What is 2+2?"
    long = Case("x" * 100).name
    assert len(long) == 48 and long.endswith("…")
    assert Case([user("from a message")]).name == "from a message"
    assert Case("q", name="mine").name == "mine"
    for bad in ({"samples": 0}, {"pass_threshold": 2.0}, {"timeout": 0}):
        with pytest.raises(UserValueError):
            Case("q", **bad)  # type: ignore[arg-type]


async def test_samples_measure_and_the_threshold_decides() -> None:
    replies = iter(["Paris", "Lyon", "Paris"])
    report = await evaluate(
        lambda: says(next(replies)),
        Case("capital?", checks=[contains("Paris")], samples=3, pass_threshold=0.6),
    )
    [case] = report.cases
    assert case.pass_rate == pytest.approx(2 / 3) and case.passed and report.passed
    assert [s.output for s in case.samples] == ["Paris", "Lyon", "Paris"]
    assert all(s.turns == 1 and s.usage.total_tokens > 0 for s in case.samples)


async def test_each_case_can_bring_its_own_model() -> None:
    @tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    agent = Agent(name="tutor", tools=[add])
    report = await evaluate(
        agent,
        [
            Case(
                "2+3?",
                checks=[tool_called("add"), contains("5")],
                model=ScriptedProvider([call("add", {"a": 2, "b": 3}), text("5")]),
            ),
            Case("hi", checks=[contains("hello")], model=ScriptedProvider([text("hello")])),
        ],
    )
    assert [c.passed for c in report.cases] == [True, True]
    assert report.cases[0].samples[0].turns == 2


async def test_a_failing_run_or_a_timeout_fails_its_sample_not_the_suite() -> None:
    @tool
    async def slow() -> str:
        """Wait."""
        await asyncio.sleep(30)
        return "late"

    scripts = iter([[], [call("slow", {}), text("x")], [text("fine")]])
    report = await evaluate(
        lambda: Agent(name="a", model=ScriptedProvider(next(scripts)), tools=[slow]),
        [Case("dry"), Case("slow", timeout=0.2), Case("ok", checks=[contains("fine")])],
        concurrency=1,
    )
    dry, late, ok = report.cases
    assert dry.samples[0].error and "AssertionError" in dry.samples[0].error
    assert late.samples[0].error and "timeout" in late.samples[0].error
    assert dry.samples[0].checks == [] and not dry.passed and not late.passed
    assert ok.passed and not report.passed


async def test_fail_fast_stops_after_the_first_failing_case() -> None:
    report = await evaluate(
        lambda: says("no"),
        [Case("a", checks=[contains("no")]), Case("b", checks=[contains("yes")]), Case("c")],
        fail_fast=True,
    )
    assert [c.name for c in report.cases] == ["a", "b"]


async def test_price_gives_a_cost_and_a_broken_price_gives_none() -> None:
    priced = await evaluate(says("hi"), Case("q"), price=lambda u: u.total_tokens * 0.25)
    assert priced.cases[0].samples[0].cost == pytest.approx(0.5)
    assert "$0.5000" in str(priced)

    def broken(usage: object) -> float:
        raise RuntimeError("no prices")

    unpriced = await evaluate(says("hi"), Case("q"), price=broken)
    assert unpriced.cases[0].samples[0].cost is None and unpriced.passed


async def test_a_failed_sample_is_priced_too() -> None:
    # as in 0.9.119: with price= every sample has a number (summing costs never meets None)
    @tool
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    agent = Agent(name="a", model=ScriptedProvider([call("slow", {})]), tools=[slow])
    cases = [
        Case("q", name="slow", timeout=0.1),
        Case("e", name="empty", model=ScriptedProvider([])),
    ]
    report = await evaluate(agent, cases, price=lambda u: 0.5 + u.total_tokens)
    samples = [c.samples[0] for c in report.cases]
    assert [s.error is not None for s in samples] == [True, True]
    assert [s.cost for s in samples] == [0.5, 0.5]
    assert "$1.0000" in str(report)


async def test_the_judge_grades_with_its_own_model() -> None:
    judge_model = ScriptedProvider([text("thinking..."), text(verdict(0.8, "names the river"))])
    judge = llm_judge("Mentions the Seine.", model=judge_model, threshold=0.75)
    report = await evaluate(says("The Seine"), Case("Which river?", checks=[judge]))
    [check] = report.cases[0].samples[0].checks
    assert (check.name, check.passed, check.score, check.reason) == (
        "llm_judge",
        True,
        0.8,
        "names the river",
    )
    asked = judge_model.calls[0][-1].text
    assert "Mentions the Seine." in asked and "Which river?" in asked and "The Seine" in asked


def test_the_judge_needs_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOVIA_EVAL_JUDGE_MODEL", raising=False)
    with pytest.raises(UserError) as info:
        llm_judge("rubric")
    assert info.value.hint and "LOVIA_EVAL_JUDGE_MODEL" in info.value.hint
    monkeypatch.setenv("LOVIA_EVAL_JUDGE_MODEL", "openai:some-model")
    assert llm_judge("rubric", name="tone").__name__ == "tone"
    with pytest.raises(UserValueError):
        llm_judge("rubric", threshold=-0.1)


def case(name: str, *passes: bool) -> CaseResult:
    return CaseResult(
        name=name,
        samples=[SampleResult(checks=[CheckResult(name="c", passed=p)]) for p in passes],
    )


def test_pass_at_k_is_the_unbiased_estimate() -> None:
    c = case("x", True, False, False, False)
    assert c.pass_at_k(1) == pytest.approx(0.25)
    assert c.pass_at_k(2) == pytest.approx(0.5)
    assert c.pass_at_k(4) == 1.0
    with pytest.raises(UserValueError):
        c.pass_at_k(5)


def test_a_saved_report_loads_back_and_compares(tmp_path: Path) -> None:
    baseline = Report(cases=[case("a", True), case("b", False), case("gone", True)])
    path = tmp_path / "baseline.json"
    baseline.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]  # no temp file left
    loaded = Report.load(path)
    assert [(c.name, c.passed) for c in loaded.cases] == [("a", True), ("b", False), ("gone", True)]
    diff = Report(cases=[case("a", False), case("b", True), case("new", True)]).compare(loaded)
    assert (diff.regressions, diff.improvements, diff.added, diff.removed) == (
        ["a"],
        ["b"],
        ["new"],
        ["gone"],
    )
    assert not diff and "regressed: a" in str(diff)
    assert str(diff).startswith("baseline: REGRESSIONS\n")  # 0.9.119's header, which CI logs grep
    assert str(loaded.compare(loaded)) == "baseline: no changes"
    with pytest.raises(UserValueError, match="duplicate case names"):
        Report(cases=[case("a", True), case("a", True)]).compare(loaded)


def test_a_report_of_another_schema_version_is_refused() -> None:
    with pytest.raises(UserValueError, match="schema_version"):
        Report.from_dict({"schema_version": 2, "cases": []})
    assert Report.from_dict({"cases": []}).passed


def test_the_summary_names_the_first_failure() -> None:
    report = Report(
        cases=[
            case("good", True),
            CaseResult(
                name="bad",
                samples=[
                    SampleResult(
                        checks=[CheckResult("llm_judge", False, score=0.4, reason="too terse")]
                    )
                ],
            ),
            CaseResult(name="broke", samples=[SampleResult(error="ProviderError: 500")]),
        ]
    )
    shown = str(report)
    assert shown.startswith("eval: 1/3 cases passed (33%) · 3 samples")
    assert "✓ good" in shown and "llm_judge (score 0.40) — too terse" in shown
    assert "error: ProviderError: 500" in shown
