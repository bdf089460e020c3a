"""How ``lovia`` answers a bare call and a wrong option, as lovia 0.9.119's users expect."""

from __future__ import annotations

from .test_cli import lovia


def test_plain_lovia_prints_the_overview_and_succeeds() -> None:
    done = lovia()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: lovia")
    for command in ("web", "chat", "sessions", "runs", "migrate"):
        assert command in done.stdout
    assert done.stderr == ""


def test_an_unknown_option_is_reported_by_the_command_it_was_given_to() -> None:
    done = lovia("web", "--no-such-option")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: lovia web")
    assert "lovia web: error: unrecognized arguments: --no-such-option" in done.stderr


def test_an_unknown_command_is_an_error() -> None:
    done = lovia("no-such-command")
    assert done.returncode == 2
    assert "no-such-command" in done.stderr
