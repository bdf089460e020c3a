"""User-facing docs never cite requirement codes such as S8, C7 or E2 (issue 17).

Nobody reading the README or a docs page can look such a code up; they belong in tests and
commit messages. The examples are read by users too, so they are checked as well.
"""

from __future__ import annotations

import pathlib
import re

from .blocks import ROOT, user_docs

CODE = re.compile(r"(?<![\w./-])[SCE][0-9]{1,2}(?![\w/])")


def _pages() -> list[pathlib.Path]:
    return [*user_docs(), *sorted((ROOT / "examples").glob("*.py"))]


def _codes(text: str) -> list[str]:
    return [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in CODE.finditer(text)
    ]


def test_the_pattern_finds_codes_as_the_docs_wrote_them() -> None:
    assert _codes("no-op (S5).") == ["line 1: S5"]
    assert _codes("again (C10, E2)\n- **E1: a") == ["line 1: C10", "line 1: E2", "line 2: E1"]
    assert _codes("C7 alone") == ["line 1: C7"]
    # not codes: words, hex, versions, paths and identifiers that merely contain one
    assert _codes("E2E, S3Bucket, 0xC1, v1.E2, docs/S1.md, CSS, C90_rules, sha-E1") == []


def test_no_page_cites_a_requirement_code() -> None:
    found = {
        str(page.relative_to(ROOT)): codes
        for page in _pages()
        if (codes := _codes(page.read_text(encoding="utf-8")))
    }
    assert found == {}, "say what the code means instead, in the reader's words"
