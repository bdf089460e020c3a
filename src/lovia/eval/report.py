"""What ``evaluate`` returns: a ``Report`` of ``CaseResult``s of ``SampleResult``s, saved as
JSON and compared with a baseline (``Report.compare`` gives a ``Diff``)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from ..errors import UserValueError
from ..usage import Usage
from .checks import CheckResult

__all__ = ["SCHEMA_VERSION", "CaseResult", "Diff", "Report", "SampleResult"]

SCHEMA_VERSION = 1
_EPSILON = 1e-9  # 2/3 of samples meets a 0.6667 threshold however the division rounds


@dataclass
class SampleResult:
    """One run of a case: its checks, output, turns, usage, latency (seconds), optional
    cost, and the ``error`` text when the run itself failed (its checks then never ran)."""

    checks: list[CheckResult] = field(default_factory=list)
    output: Any = None
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    cost: float | None = None
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(c.passed for c in self.checks)


@dataclass
class CaseResult:
    """Every sample of one case. ``passed`` when the share of passing samples reaches
    ``pass_threshold``."""

    name: str
    samples: list[SampleResult]
    pass_threshold: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float:
        if not self.samples:
            return 0.0
        return sum(s.passed for s in self.samples) / len(self.samples)

    @property
    def passed(self) -> bool:
        return bool(self.samples) and self.pass_rate + _EPSILON >= self.pass_threshold

    def pass_at_k(self, k: int) -> float:
        """The chance that at least one of ``k`` samples drawn from these passes (the
        unbiased estimator over the ``n`` samples run; ``1 <= k <= n``)."""
        n = len(self.samples)
        if not 1 <= k <= n:
            raise UserValueError(f"pass_at_k: k must be between 1 and {n} (samples run), got {k}")
        good = sum(s.passed for s in self.samples)
        if n - good < k:
            return 1.0
        return 1.0 - math.comb(n - good, k) / math.comb(n, k)


@dataclass
class Diff:
    """How a report differs from its baseline, case by case (joined by name). True when
    nothing regressed; improvements and added or removed cases do not make it false."""

    regressions: list[str]
    improvements: list[str]
    added: list[str]
    removed: list[str]

    @property
    def ok(self) -> bool:
        return not self.regressions

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        rows = [
            ("regressed", self.regressions),
            ("improved", self.improvements),
            ("added", self.added),
            ("removed", self.removed),
        ]
        if not any(names for _, names in rows):
            return "baseline: no changes"
        head = "baseline: ok" if self.ok else "baseline: REGRESSIONS"
        lines = [head] + [f"  {label}: {', '.join(names)}" for label, names in rows if names]
        return "\n".join(lines)


@dataclass
class Report:
    """The results of a suite: ``passed`` when every case passed."""

    cases: list[CaseResult]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    @property
    def pass_rate(self) -> float:
        if not self.cases:
            return 1.0
        return sum(c.passed for c in self.cases) / len(self.cases)

    # -- baselines ------------------------------------------------------------------------

    def compare(self, baseline: Report) -> Diff:
        """What changed since ``baseline``: cases that passed there and fail here
        (regressions), the reverse (improvements), and cases only on one side."""
        now = _by_name(self, "current")
        then = _by_name(baseline, "baseline")
        both = [n for n in now if n in then]  # in the current report's order
        return Diff(
            regressions=[n for n in both if then[n] and not now[n]],
            improvements=[n for n in both if now[n] and not then[n]],
            added=[n for n in now if n not in then],
            removed=[n for n in then if n not in now],
        )

    # -- files ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "cases": [_case_dict(c) for c in self.cases],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise UserValueError(
                f"this report has schema_version {version!r}; this lovia reads {SCHEMA_VERSION}",
                hint="re-run the suite and save a new baseline",
            )
        return cls(cases=[_case_from(c) for c in data.get("cases", [])])

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the report as JSON to ``path`` (atomically: a reader sees the old file or
        the whole new one)."""
        target = Path(path)
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text + "\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Report:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def __str__(self) -> str:
        return _render(self)


def _by_name(report: Report, side: str) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for case in report.cases:
        if case.name in out:
            raise UserValueError(
                f"duplicate case names in {side}: {case.name!r}",
                hint="give the cases distinct names: Case(..., name='...')",
            )
        out[case.name] = case.passed
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        converted = to_jsonable_python(value)
        json.dumps(converted)
    except (TypeError, ValueError):
        return repr(value)
    return converted


def _case_dict(case: CaseResult) -> dict[str, Any]:
    return {
        "name": case.name,
        "passed": case.passed,
        "pass_rate": case.pass_rate,
        "pass_threshold": case.pass_threshold,
        "metadata": _jsonable(case.metadata),
        "samples": [_sample_dict(s) for s in case.samples],
    }


def _sample_dict(s: SampleResult) -> dict[str, Any]:
    return {
        "passed": s.passed,
        "output": _jsonable(s.output),
        "turns": s.turns,
        "usage": {
            "input_tokens": s.usage.input_tokens,
            "output_tokens": s.usage.output_tokens,
            "cache_read_tokens": s.usage.cache_read_tokens,
            "cache_write_tokens": s.usage.cache_write_tokens,
        },
        "latency": s.latency,
        "cost": s.cost,
        "error": s.error,
        "checks": [
            {"name": c.name, "passed": c.passed, "score": c.score, "reason": c.reason}
            for c in s.checks
        ],
    }


def _case_from(data: dict[str, Any]) -> CaseResult:
    return CaseResult(
        name=str(data["name"]),
        samples=[_sample_from(s) for s in data.get("samples", [])],
        pass_threshold=float(data.get("pass_threshold", 1.0)),
        metadata=dict(data.get("metadata") or {}),
    )


def _sample_from(data: dict[str, Any]) -> SampleResult:
    usage = data.get("usage") or {}
    return SampleResult(
        checks=[
            CheckResult(
                name=str(c.get("name", "")),
                passed=bool(c.get("passed")),
                score=c.get("score"),
                reason=str(c.get("reason") or ""),
            )
            for c in data.get("checks", [])
        ],
        output=data.get("output"),
        turns=int(data.get("turns", 0)),
        usage=Usage(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            cache_read_tokens=int(usage.get("cache_read_tokens", 0)),
            cache_write_tokens=int(usage.get("cache_write_tokens", 0)),
        ),
        latency=float(data.get("latency", 0.0)),
        cost=data.get("cost"),
        error=data.get("error"),
    )


# -- the printed summary ------------------------------------------------------------------


def _first_failure(case: CaseResult) -> str:
    for sample in case.samples:
        if sample.error is not None:
            return f"error: {sample.error}"
        for check in sample.checks:
            if not check.passed:
                score = f" (score {check.score:.2f})" if check.score is not None else ""
                why = f" — {check.reason}" if check.reason else ""
                return f"{check.name}{score}{why}"
    return ""


def _render(report: Report) -> str:
    samples = [s for c in report.cases for s in c.samples]
    tokens = sum(s.usage.total_tokens for s in samples)
    seconds = sum(s.latency for s in samples)
    costs = [s.cost for s in samples if s.cost is not None]
    passed = sum(c.passed for c in report.cases)
    head = (
        f"eval: {passed}/{len(report.cases)} cases passed ({report.pass_rate:.0%}) · "
        f"{len(samples)} samples · {tokens:,} tokens · {seconds:.1f}s"
    )
    if costs:
        head += f" · ${sum(costs):.4f}"
    width = max((len(c.name) for c in report.cases), default=0)
    lines = [head]
    for case in report.cases:
        good = sum(s.passed for s in case.samples)
        mark = "✓" if case.passed else "✗"
        row = f"  {mark} {case.name.ljust(width)}  {good}/{len(case.samples)}"
        if not case.passed:
            failure = _first_failure(case)
            if failure:
                row += f"  {failure}"
        lines.append(row)
    return "\n".join(lines)
