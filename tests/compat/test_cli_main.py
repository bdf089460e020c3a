"""``lovia.cli.main(argv)`` called from a program or a test, as lovia 0.9.119's users call it:
the overview, ``--help``, ``--version`` and an unknown command come back as the returned exit
status (0.9.119 returns them; it does not raise ``SystemExit``)."""

from __future__ import annotations

import pytest

from lovia import __version__, cli


@pytest.mark.parametrize("argv", [[], ["-h"], ["--help"]])
def test_the_overview_is_printed_and_main_returns_0(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert out.startswith("usage: lovia")
    for command in ("web", "chat", "sessions", "runs"):
        assert command in out
    assert err == ""


def test_the_version_is_printed_and_main_returns_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"lovia {__version__} (durable core; ") and out.count("\n") == 1


def test_an_unknown_command_returns_2_and_says_so_with_the_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["wbe"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "usage: lovia" in err
    assert "unknown command 'wbe' (did you mean web?)" in err
    assert "hint:" in err


def test_a_command_keeps_its_own_parser_exits(capsys: pytest.CaptureFixture[str]) -> None:
    """A command's ``--help`` and a wrong option exit from its parser, as ``lovia web``'s did
    in 0.9.119."""
    with pytest.raises(SystemExit) as helped:
        cli.main(["web", "--help"])
    assert helped.value.code == 0
    assert capsys.readouterr().out.startswith("usage: lovia web")
    with pytest.raises(SystemExit) as refused:
        cli.main(["web", "--no-such-option"])
    assert refused.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
