"""The CLI's reference (the table in docs/web.md) lists every command ``lovia --help`` has,
with every option the command takes: a user who reads the table and not ``--help`` still
finds ``runs approve`` and ``runs prune --dry-run``."""

from __future__ import annotations

import argparse
import re

from lovia.cli import build_parser

from .blocks import ROOT


def _commands(parser: argparse.ArgumentParser, path: str = "lovia") -> dict[str, list[str]]:
    """Each command (``lovia runs prune``) with its long options, ``--help`` aside; a command
    with subcommands that also runs on its own (``lovia web``, ``lovia web init-ui``) is one
    too."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    own = [o for o in options if o != "--help"]
    if not subs:
        return {path: own}
    found: dict[str, list[str]] = {path: own} if own and path != "lovia" else {}
    for name, sub in subs[0].choices.items():
        found.update(_commands(sub, f"{path} {name}"))
    return found


def _cli_sections() -> str:
    """docs/web.md from its CLI section on: the table and 0.9.119's options."""
    return (ROOT / "docs" / "web.md").read_text(encoding="utf-8").split("## The CLI", 1)[1]


def _table_rows() -> dict[str, str]:
    """The CLI table's rows by the command they start with: ``lovia runs prune`` -> its row."""
    section = _cli_sections().split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        m = re.match(r"\| `(lovia(?: [a-z-]+)+)", line)
        if m:
            rows[m.group(1)] = line
    return rows


def _names(option: str, text: str) -> bool:
    """``text`` names ``option`` itself (``--all``, not ``--all-runs``)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_the_cli_table_has_every_command_and_option() -> None:
    commands = _commands(build_parser())
    assert len(commands) > 15
    rows = _table_rows()
    missing = sorted(set(commands) - set(rows))
    assert not missing, f"docs/web.md's CLI table has no row for {missing}"
    common = {"--db", "--json"}  # said once, above the table
    unlisted = {
        command: [o for o in options if o not in common and not _names(o, rows[command])]
        for command, options in commands.items()
        if command != "lovia web"  # its 0.9.119 options have their own table below
    }
    assert {c: o for c, o in unlisted.items() if o} == {}
    web = [o for o in commands["lovia web"] if not _names(o, _cli_sections())]
    assert web == [], "lovia web options neither in its row nor in the 0.9.119 table"
