"""Attacks on the page in Debian's Chromium: model output with links that would run script
or load a document, and calls whose ids a provider chose (with '/' or non-ASCII) that a
person must still be able to approve from the page."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, ApprovalPending, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.stores.run_options import CheckpointOptions
from lovia.testing import ScriptedProvider, call, text

from .test_browser import Server, _open, _send, _wait_idle, browser, page, server

__all__ = ["browser", "page", "server"]  # the fixtures, used by name


def test_markdown_links_to_script_or_documents_lose_their_target(page: Any) -> None:
    """The demo echoes the text as its Markdown answer: links written the Markdown way (not
    as HTML) with javascript:, data: and vbscript: targets, in every spelling, keep no
    href; a reference-style one too; a plain https link keeps its own."""
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    probe = " ".join(
        [
            "[a](javascript:window.__xss=1)",
            "[b](JaVaScRiPt:window.__xss=2)",
            "[c](java&#x09;script:window.__xss=3)",
            "[d](data:text/html,<script>window.__xss=4</script>)",
            "[e](vbscript:msgbox)",
            "[f]( javascript:window.__xss=6)",
            "<javascript:window.__xss=7>",
            "![g](javascript:window.__xss=8)",
            "[h][ref] [ok](https://example.org/)",
            "\n\n[ref]: javascript:window.__xss=9",
        ]
    )
    _send(page, probe)
    _wait_idle(page)
    answer = page.locator("[data-testid=answer]").last
    hrefs = answer.locator("a").evaluate_all("(links) => links.map((a) => a.getAttribute('href'))")
    assert hrefs.count("https://example.org/") == 1
    assert [h for h in hrefs if h is not None and h != "https://example.org/"] == [], hrefs
    assert answer.locator("img[src]").count() == 0
    for label in "abcdefh":
        answer.locator("a", has_text=label).first.click()
    page.wait_for_timeout(300)  # give any handler the chance to run; the check is its absence
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    assert len(page.context.pages) == 1  # no link opened anything


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay ``amount``."""
    return f"paid {amount}"


def _park(db: Path, chat_id: str, call_id: str) -> None:
    async def park() -> None:
        session, checkpointer = SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)
        turns = [call("pay", {"amount": 7}, call_id=call_id), text("done")]
        agent = Agent(
            "payer", model=ScriptedProvider(turns), tools=[pay], approval_handler=lambda *_: "defer"
        )
        with pytest.raises(ApprovalPending):
            await Runner.run(
                agent,
                "pay seven",
                session=session,
                session_id=chat_id,
                checkpoint=CheckpointOptions(checkpointer, "job 7/é"),
            )
        await session.close()
        await checkpointer.close()

    writer = threading.Thread(target=lambda: asyncio.run(park()))
    writer.start()
    writer.join()


@pytest.mark.parametrize("call_id", ["call 1/2", "appel-é", "call_plain"])
def test_a_call_parked_by_a_program_is_approved_from_the_page(
    browser: Any, tmp_path: Path, call_id: str
) -> None:
    db = tmp_path / "parked.db"
    _park(db, "team/alice", call_id)
    answers = Agent("payer", model=ScriptedProvider([text("paid, done")] * 3), tools=[pay])
    with Server(db, agents={"payer": answers}) as served:
        context, p, errors = _open(browser, served.url)
        p.click("[data-testid=open-resumable]")
        card = p.locator("[data-testid=approval]")
        card.wait_for()
        card.locator("[data-testid=approve]").click()
        p.locator("[data-testid=answer]", has_text="paid, done").wait_for()
        _wait_idle(p)
        assert p.locator("[data-testid=approval]").count() == 0
        entries = [e for s in served.segments("team/alice") for e in s.entries]
        assert [e.type for e in entries] == ["input", "tool_call", "tool_result", "assistant_text"]
        assert entries[2].output == "paid 7"
        context.close()
        assert errors == []
