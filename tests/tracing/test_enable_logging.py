"""enable_logging: lovia is silent until asked, then logs once per line."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import lovia
from lovia import UserError, enable_logging

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(autouse=True)
def restore_lovia_logger() -> Iterator[None]:
    log = logging.getLogger("lovia")
    saved = (list(log.handlers), log.level, log.propagate)
    yield
    log.handlers[:] = saved[0]
    log.setLevel(saved[1])
    log.propagate = saved[2]


def test_importing_lovia_prints_nothing_and_warns_nothing() -> None:
    program = (
        "import logging, lovia\n"
        "logging.getLogger('lovia.run').warning('run.start: hello')\n"
        "print('done')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    assert done.stderr == ""


def test_enable_logging_writes_lovia_lines_to_the_stream() -> None:
    out = io.StringIO()
    log = enable_logging("DEBUG", stream=out, format="%(levelname)s %(name)s: %(message)s")
    assert log is logging.getLogger("lovia")
    logging.getLogger("lovia.run").debug("run.start: agent=%s", "a")
    logging.getLogger("other").warning("not ours")
    assert out.getvalue() == "DEBUG lovia.run: run.start: agent=a\n"
    assert log.level == logging.DEBUG


def test_calling_it_again_replaces_its_handler_and_keeps_yours() -> None:
    mine = io.StringIO()
    logging.getLogger("lovia").addHandler(logging.StreamHandler(mine))
    first, second = io.StringIO(), io.StringIO()
    enable_logging(stream=first, format="%(message)s")
    enable_logging(stream=second, format="%(message)s")
    logging.getLogger("lovia.tool").info("tool.start: add")
    assert first.getvalue() == ""
    assert second.getvalue() == "tool.start: add\n"
    assert mine.getvalue() == "tool.start: add\n"


def test_records_do_not_reach_the_root_logger_unless_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    out = io.StringIO()
    with caplog.at_level(logging.INFO):
        enable_logging(stream=out)
        logging.getLogger("lovia.run").info("run.done")
        assert caplog.records == []
        enable_logging(stream=out, propagate=True)
        logging.getLogger("lovia.run").info("run.done")
        assert [r.getMessage() for r in caplog.records] == ["run.done"]


def test_color_paints_the_level_and_event_token_and_leaves_the_record_plain() -> None:
    painted, plain = io.StringIO(), io.StringIO()
    enable_logging(stream=painted, color=True, format="%(levelname)s %(message)s")
    other = logging.StreamHandler(plain)
    other.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    logging.getLogger("lovia").addHandler(other)
    logging.getLogger("lovia.model").warning("model.retry: attempt %d", 2)
    assert painted.getvalue() == "\033[33mWARNING\033[0m \033[1mmodel.retry:\033[0m attempt 2\n"
    assert plain.getvalue() == "WARNING lovia.model model.retry: attempt 2\n"


def test_color_is_off_for_a_stream_that_is_not_a_terminal() -> None:
    out = io.StringIO()
    enable_logging(stream=out, format="%(levelname)s %(message)s")
    logging.getLogger("lovia").error("tool.error: boom")
    assert out.getvalue() == "ERROR tool.error: boom\n"


def test_no_color_turns_colour_off_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    coloured = Terminal()
    enable_logging(stream=coloured, format="%(levelname)s %(message)s")
    logging.getLogger("lovia").info("x")
    assert "\033[" in coloured.getvalue()

    monkeypatch.setenv("NO_COLOR", "1")
    quiet = Terminal()
    enable_logging(stream=quiet, format="%(levelname)s %(message)s")
    logging.getLogger("lovia").info("x")
    assert quiet.getvalue() == "INFO x\n"


def test_an_unknown_level_name_says_which_names_work() -> None:
    with pytest.raises(UserError) as caught:
        enable_logging("LOUD")
    assert "DEBUG" in (caught.value.hint or "")
    assert "enable_logging" in lovia.__all__
