"""Recorded runs as regression tests (issue 35): a run stored in SQLite or PostgreSQL is
re-run against its recorded model turns, and every way it goes otherwise is reported."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lovia import CheckpointOptions, Runner, SQLiteCheckpointer
from lovia.testing import (
    RecordedProvider,
    ScriptedProvider,
    assert_same_run,
    batch,
    call,
    retest,
    text,
)
from tests.stores.pg import drop_prefix, postgres_dsn
from tests.testing_kit import retest_app

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [
    call("price", {"item": "tea"}, call_id="c1"),
    batch(("price", {"item": "cake"}, "c2"), ("price", {"item": "jam"}, "c3")),
    text("tea 120, cake 120, jam 120"),
]


@pytest.fixture(params=["sqlite", "postgres"])
async def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "sqlite":
        cp: Any = SQLiteCheckpointer(tmp_path / "runs.db")
        yield cp
        await cp.close()
        return
    from lovia import PostgresCheckpointer

    dsn, prefix = postgres_dsn(), f"rt{uuid.uuid4().hex[:10]}_"
    cp = PostgresCheckpointer(dsn, table_prefix=prefix)
    yield cp
    await cp.close()
    drop_prefix(dsn, prefix)


async def record(checkpointer: Any, run_id: str = "recorded") -> None:
    """Run the shop agent once on a scripted model, checkpointed: the recording."""
    agent = retest_app.agent.clone(model=ScriptedProvider(SCRIPT))
    await Runner.run(agent, "prices?", checkpoint=CheckpointOptions(checkpointer, run_id))


async def test_the_recorded_provider_plays_the_model_turns_back_in_order(
    checkpointer: Any,
) -> None:
    await record(checkpointer)
    model = RecordedProvider(checkpointer, "recorded")
    result = await Runner.run(retest_app.agent.clone(model=model), "prices?")
    assert result.output == "tea 120, cake 120, jam 120"
    assert model.remaining == 0
    assert len(model.calls) == 3
    with pytest.raises(Exception, match="the recording of run 'recorded' has 3"):
        await Runner.run(retest_app.agent.clone(model=model), "more?")  # nothing left


async def test_an_unchanged_agent_re_runs_the_same(checkpointer: Any) -> None:
    await record(checkpointer)
    before = await checkpointer.load("recorded")
    report = await assert_same_run(retest_app.agent, checkpointer, "recorded")
    assert report.same and report.output == report.recorded_output
    assert "matches its recording" in report.diff()
    assert await checkpointer.load("recorded") == before  # re-testing stores nothing


async def test_a_changed_tool_shows_where_the_results_differ(
    checkpointer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    await record(checkpointer)
    monkeypatch.setenv("LOVIA_RETEST_TAX", "25")
    with pytest.raises(AssertionError) as info:
        await assert_same_run(retest_app.agent, checkpointer, "recorded")
    diff = str(info.value)
    assert "the re-run diverges from its recording (3)" in diff
    assert "tool 'price' returned another result (call 'c1')" in diff
    assert "- recorded: tea: 120" in diff and "+ now:      tea: 125" in diff
    assert "(call 'c3')" in diff
    report = await retest(retest_app.agent, checkpointer, "recorded")
    assert [d.kind for d in report] == ["tool_result"] * 3


async def test_a_turn_the_recording_lacks_and_a_different_output(checkpointer: Any) -> None:
    """An agent whose output now fails validation asks the model again: the recording has
    no such turn."""
    await record(checkpointer)
    strict = retest_app.agent.clone(output_type=int)
    report = await retest(strict, checkpointer, "recorded")
    kinds = [d.kind for d in report]
    assert "extra_turn" in kinds, report.diff()
    assert "a turn the recording lacks" in report.diff()


async def test_other_arguments_and_another_final_output(checkpointer: Any) -> None:
    """With a model of one's own (a new prompt's answers), a tool called with other
    arguments and another answer are both reported."""
    await record(checkpointer)
    model = ScriptedProvider(
        [
            call("price", {"item": "coffee"}, call_id="c1"),
            batch(("price", {"item": "cake"}, "c2"), ("price", {"item": "jam"}, "c3")),
            text("coffee 120, cake 120, jam 120"),
        ]
    )
    report = await retest(retest_app.agent, checkpointer, "recorded", model=model)
    diff = report.diff()
    assert [d.kind for d in report] == [
        "tool_arguments",
        "tool_result",
        "text",
        "output",
    ], diff
    assert "tool 'price' was called with other arguments (call 'c1')" in diff
    assert '- recorded: {"item": "tea"}' in diff and '+ now:      {"item": "coffee"}' in diff
    assert "the final output differs" in diff


async def test_an_unknown_run_is_a_clear_error(checkpointer: Any) -> None:
    from lovia import UserError

    with pytest.raises(UserError) as info:
        await retest(retest_app.agent, checkpointer, "nope")
    assert info.value.hint


def retest_cli(db: str, run_id: str, tax: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "lovia", "runs", "retest", run_id, "--db", db, *extra),
            *("--app", "tests.testing_kit.retest_app:agent"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LOVIA_RETEST_TAX": tax},
    )


async def test_the_cli_exits_1_on_divergence_and_0_when_the_same(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    cp = SQLiteCheckpointer(db)
    await record(cp)
    await cp.close()
    same = retest_cli(str(db), "recorded", "20")
    assert same.returncode == 0, same.stderr
    assert "matches its recording" in same.stdout
    changed = retest_cli(str(db), "recorded", "30")
    assert changed.returncode == 1, changed.stderr
    assert "tool 'price' returned another result (call 'c1')" in changed.stdout
    assert "+ now:      tea: 130" in changed.stdout
    unknown = retest_cli(str(db), "nope", "20")
    assert unknown.returncode == 2 and "no run 'nope'" in unknown.stderr


def lovia_cli(*args: str, tax: str = "20") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lovia", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "LOVIA_RETEST_TAX": tax},
    )


async def test_a_run_exported_to_a_file_retests_without_the_database(tmp_path: Path) -> None:
    """`lovia runs export` writes the snapshot; `retest --from` reads it with no --db at all,
    and the database is left byte for byte as it was."""
    db = tmp_path / "runs.db"
    cp = SQLiteCheckpointer(db)
    await record(cp)
    await cp.close()
    before = db.read_bytes()
    out = tmp_path / "recorded.json"
    exported = lovia_cli("runs", "export", "recorded", "--db", str(db), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "wrote run 'recorded'" in exported.stdout
    assert db.read_bytes() == before
    app = ("--app", "tests.testing_kit.retest_app:agent")
    same = lovia_cli("runs", "retest", "--from", str(out), *app)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "matches its recording" in same.stdout
    changed = lovia_cli("runs", "retest", "--from", str(out), *app, tax="30")
    assert changed.returncode == 1, changed.stderr
    assert "tool 'price' returned another result (call 'c1')" in changed.stdout
    other = lovia_cli("runs", "retest", "other", "--from", str(out), *app)
    assert other.returncode == 2 and "holds run 'recorded', not 'other'" in other.stderr
    out.write_text("{not json", encoding="utf-8")
    broken = lovia_cli("runs", "retest", "--from", str(out), *app)
    assert broken.returncode == 2 and "is not a run written by 'lovia runs export'" in broken.stderr
    neither = lovia_cli("runs", "retest", *app)
    assert neither.returncode == 2 and "give its id, or --from FILE" in neither.stderr
