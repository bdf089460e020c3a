"""Every relative link of the README and the docs leads somewhere: the file exists, and a
``#fragment`` names one of its headings (as GitHub renders it)."""

from __future__ import annotations

import pathlib
import re

from .blocks import ROOT, user_docs

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    prose = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in HEADING.findall(prose)}


def broken_links(page: pathlib.Path) -> list[str]:
    prose = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(prose):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading #{fragment}")
    return broken


def test_slug_matches_github() -> None:
    assert slug("Two runs at once: the session version") == "two-runs-at-once-the-session-version"
    assert slug("Steering: `Mailbox`") == "steering-mailbox"
    assert slug("Workers on a job queue (PostgreSQL)") == "workers-on-a-job-queue-postgresql"
    assert slug("Tools: at least once, and `on_resume`") == "tools-at-least-once-and-on_resume"


def test_every_relative_link_resolves() -> None:
    found = {
        str(page.relative_to(ROOT)): broken
        for page in user_docs()
        if (broken := broken_links(page))
    }
    assert found == {}
