"""Find the Python code blocks of the README and the docs, and what each one asks of the test.

A block is a program a reader can paste into a file and run, offline, as written. Its first
comment lines may say otherwise:

- ``# needs: OPENAI_API_KEY`` (or another name in ``NEEDS``): it needs something a test run
  does not have (a real model, a database server, a lovia newer than this checkout); it is
  compiled, not run.
- ``# fragment``: a piece of a larger program (a signature, a function body); it is compiled,
  with top-level ``await`` allowed, not run.

A comment ``# -> TEXT``, after a ``print(...)`` or on a line of its own, says the program
prints ``TEXT``; the test checks that the outputs appear in that order.
"""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]

# What a compile-only block may need. Keep the list short: every entry is a block nobody runs.
NEEDS = {
    "OPENAI_API_KEY": "a real OpenAI-compatible model",
    "ANTHROPIC_API_KEY": "a real Anthropic model",
    "PostgreSQL": "a PostgreSQL server",
    "lovia>=next": "API that lands after this checkout",
}

_FENCE = re.compile(r"^```(\w*)\s*$")
_NEEDS = re.compile(r"^#\s*needs:\s*(.+?)\s*$")
_EXPECT = re.compile(r"#\s*->\s*(.+?)\s*$")


def user_docs() -> list[pathlib.Path]:
    """Every page a user reads: the README and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    path: pathlib.Path
    line: int  # 1-based line of the opening fence
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def _header(self) -> list[str]:
        lines = []
        for raw in self.code.splitlines():
            if not raw.startswith("#"):
                break
            lines.append(raw)
        return lines

    @property
    def needs(self) -> list[str]:
        found: list[str] = []
        for line in self._header():
            m = _NEEDS.match(line)
            if m:
                found.extend(part.strip() for part in m.group(1).split(","))
        return found

    @property
    def fragment(self) -> bool:
        return any(line.startswith("# fragment") for line in self._header())

    @property
    def runs(self) -> bool:
        return not self.needs and not self.fragment

    @property
    def expected_output(self) -> list[str]:
        out = []
        for line in self.code.splitlines():
            m = _EXPECT.search(line)
            if m and line.lstrip().startswith(("print(", "#")):
                out.append(m.group(1))
        return out


def python_blocks(path: pathlib.Path) -> list[Block]:
    blocks: list[Block] = []
    lang: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = _FENCE.match(line)
        if lang is None:
            if m:
                lang, start, body = m.group(1), number, []
        elif m and not m.group(1):
            if lang in ("python", "py"):
                blocks.append(Block(path, start, "\n".join(body) + "\n"))
            lang = None
        else:
            body.append(line)
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in user_docs() for block in python_blocks(page)]
