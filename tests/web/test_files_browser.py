"""Issue 31's attachments, Files panel and inline workspace images in Chromium against a real
server, driven as a user would: files picked in the composer are uploaded and sent with the
next message (the model is told their workspace paths and gets the image), a reply's
workspace-relative image shows the workspace file and its link points at it; the Files panel
lists recent files and folders, previews text and images, uploads. Names stay text."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent
from lovia.parts import ImagePart
from lovia.testing import ScriptedProvider, call, text
from lovia.workspace import Workspace

from .test_browser import Server
from .test_page_browser import Pages, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses

ODD = '<img src=x onerror="window.__owned=1">.txt'


def png(width: int = 3, height: int = 2) -> bytes:
    """A small valid PNG (red pixels)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class Seen:
    def __init__(self) -> None:
        self.inputs: list[Any] = []

    def __call__(self, messages: list[Any]) -> Any:
        self.inputs.append(messages[-1].content)
        return text(
            "Here it is: ![the dot](uploads/dot.png) and [the notes](docs/notes.md); "
            "![away](https://example.invalid/x.png)"
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Server, Path, Seen]]:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.md").write_text(f"# Notes\nline two\n\n{ODD[:-4]}\n")
    (root / "pic.png").write_bytes(png())
    (root / "keys.env").write_text("KEY=1")
    (root / ODD).write_text("odd")
    seen = Seen()
    ws = Workspace.local(str(root), mode="coding", denied_paths=("keys.env",))
    agents = {
        "bot": Agent(name="bot", model=ScriptedProvider([seen, seen]), workspace=ws),
        "plain": Agent(name="plain", model=ScriptedProvider([text("hi")])),
    }
    with Server(tmp_path / "lovia.db", agents=agents) as running:
        yield running, root, seen


def test_attached_files_go_with_the_message_and_reply_images_come_from_the_workspace(
    pages: Pages, workspace: tuple[Server, Path, Seen], tmp_path: Path
) -> None:
    server, root, seen = workspace
    (tmp_path / "dot.png").write_bytes(png())
    (tmp_path / "draft.txt").write_text("draft")
    page = pages.open(server.url)
    page.locator("#agent-switcher").select_option("plain")
    page.wait_for_selector("#attach[hidden]", state="attached")  # no workspace, no attaching
    page.locator("#agent-switcher").select_option("bot")
    page.wait_for_selector("#attach:not([hidden])")
    page.set_input_files("#attach-input", [str(tmp_path / "dot.png"), str(tmp_path / "draft.txt")])
    chips = page.locator("[data-testid=attachment]:not(.uploading)")
    page.wait_for_function(
        "document.querySelectorAll('[data-testid=attachment]:not(.uploading)').length === 2"
    )
    assert (root / "uploads" / "dot.png").read_bytes() == png()
    chips.nth(1).locator("[data-testid=attachment-remove]").click()  # not this one after all
    assert chips.count() == 1
    send(page, "what is this?")
    wait_idle(page)
    assert page.locator("#attachments").is_hidden()  # sent: the chips are gone
    sent = seen.inputs[-1]
    assert isinstance(sent, list)
    words = "".join(getattr(p, "text", "") for p in sent)
    assert "what is this?" in words and "uploads/dot.png" in words and "draft.txt" not in words
    assert any(isinstance(p, ImagePart) for p in sent)
    # the reply's workspace image shows the workspace file; its link points there too
    answer = page.locator("[data-testid=answer]").last
    image = answer.locator("img[alt='the dot']")
    assert "api/workspace/raw?" in (image.get_attribute("src") or "")
    page.wait_for_function(
        "[...document.querySelectorAll('[data-testid=answer] img')]"
        ".some((i) => i.alt === 'the dot' && i.complete && i.naturalWidth === 3)"
    )
    link = answer.locator("a", has_text="the notes")
    href = link.get_attribute("href") or ""
    assert "api/workspace/raw?" in href and "download=1" in href
    assert httpx.get(server.url + href).text.startswith("# Notes")
    away = answer.locator("img[alt='away']")
    assert away.get_attribute("src") == "https://example.invalid/x.png"  # not rewritten
    page.screenshot(path=str(tmp_path / "attachments.png"))


def test_the_files_panel_lists_previews_and_uploads(
    pages: Pages, workspace: tuple[Server, Path, Seen], tmp_path: Path
) -> None:
    server, root, _ = workspace
    page = pages.open(server.url)
    page.locator("#agent-switcher").select_option("bot")
    page.wait_for_selector("#files-btn:not([hidden])")
    page.click("#files-btn")
    dialog = page.locator("[data-testid=files-dialog]")
    dialog.locator("[data-testid=file]").first.wait_for()
    names = dialog.locator("[data-testid=file] .file-open").all_inner_texts()
    assert {"docs/notes.md", "pic.png", ODD} <= set(names)
    assert "keys.env" not in names  # the agent may not read it: not listed
    assert page.evaluate("window.__owned") is None  # a file name is text
    dialog.locator(".file-open", has_text="docs/notes.md").click()
    # Markdown reads rendered, sanitized as a reply is; Source shows its text
    shown = dialog.locator("[data-testid=files-markdown]")
    assert shown.locator("h1").inner_text() == "Notes"
    assert shown.locator("[onerror]").count() == 0  # the sanitizer took the handler
    assert page.evaluate("window.__owned") is None
    dialog.locator("[data-testid=files-source-toggle]").click()
    assert dialog.locator("[data-testid=files-text]").inner_text().startswith("# Notes")
    assert shown.is_hidden()
    dialog.locator(".file-open", has_text="pic.png").click()
    page.wait_for_function(
        "(() => { const i = document.querySelector('[data-testid=files-image]');"
        " return i && i.complete && i.naturalWidth === 3; })()"
    )
    # Filter: only the rows whose path holds the text
    dialog.locator("[data-testid=files-filter]").fill("NOTES")
    shown_rows = dialog.locator("[data-testid=file]:visible .file-open").all_inner_texts()
    assert shown_rows == ["docs/notes.md"]
    dialog.locator("[data-testid=files-filter]").fill("")
    assert dialog.locator("[data-testid=file]:visible").count() == len(names)
    # browse: folders first, then into docs/
    dialog.locator("[data-testid=files-browse]").click()
    dialog.locator("[data-testid=folder] .file-open", has_text="docs/").click()
    dialog.locator(".file-open", has_text="notes.md").wait_for()
    # upload from the panel
    (tmp_path / "report.txt").write_text("quarterly")
    dialog.locator("[data-testid=files-upload-input]").set_input_files(str(tmp_path / "report.txt"))
    page.wait_for_selector("[data-testid=panel-status]:has-text('uploads/report.txt')")
    assert (root / "uploads" / "report.txt").read_text() == "quarterly"
    dialog.locator(".file-open", has_text="uploads/report.txt").wait_for()
    page.screenshot(path=str(tmp_path / "files.png"))
    # an agent without a workspace has no Files panel
    page.locator("[data-testid=dialog-close]").click()
    page.locator("#agent-switcher").select_option("plain")
    page.wait_for_selector("#files-btn[hidden]", state="attached")


def test_the_panels_hold_under_the_csp_in_chinese_and_dark(
    pages: Pages, workspace: tuple[Server, Path, Seen], tmp_path: Path
) -> None:
    server, _, _ = workspace
    (tmp_path / "dot.png").write_bytes(png())
    page = pages.open(server.url, ready=False, bypass_csp=False)
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    page.locator("#theme-toggle").click()
    page.locator("#lang-toggle").click()
    page.locator("#agent-switcher").select_option("bot")
    page.locator("#attach:not([hidden])").wait_for()
    page.set_input_files("#attach-input", str(tmp_path / "dot.png"))
    page.locator("[data-testid=attachment]:not(.uploading)").wait_for()
    page.locator("#input").fill("看看这个")
    page.locator("#input").press("Enter")
    page.locator("[data-testid=regenerate]").wait_for()
    page.locator("[data-testid=answer] img[alt='the dot']").wait_for()
    for name, heading in (("files", "文件"), ("schedules", "定时任务")):
        page.locator(f"#{name}-btn").click()
        dialog = page.locator(f"[data-testid={name}-dialog]")
        assert dialog.locator("h3").inner_text() == heading
        page.screenshot(path=str(tmp_path / f"{name}-zh-dark.png"))
        dialog.locator("[data-testid=dialog-close]").click()
    assert page.locator("[data-testid=user-message] [data-testid=action-rerun]").inner_text() == (
        "从这里重新运行"
    )
    # only the reply's image from another site is blocked, as the policy says
    blocked = [v for v in violations if "Content Security Policy" in v]
    assert blocked and all("https://example.invalid/x.png" in v for v in blocked), blocked


def test_workspace_paths_in_model_output_reach_nothing_else(tmp_path: Path, pages: Pages) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "secret.png").write_bytes(png())  # outside the workspace
    (root / "ok.png").write_bytes(png())
    reply = (
        '<img src="ok.png" id="send" name="input" onerror="window.__owned=1" alt="raw">\n\n'
        "![up](../secret.png) [run](javascript:window.__owned=1) "
        "[api](api/sessions) ![q](?x=1)"
    )
    ws = Workspace.local(str(root), mode="coding")
    agent = Agent(name="bot", model=ScriptedProvider([text(reply)]), workspace=ws)
    with Server(tmp_path / "lovia.db", agents=agent) as server:
        page = pages.open(server.url)
        send(page, "show me")
        wait_idle(page)
        answer = page.locator("[data-testid=answer]").last
        raw = answer.locator("img[alt=raw]")
        assert "api/workspace/raw?" in (raw.get_attribute("src") or "")
        assert raw.get_attribute("id") is None and raw.get_attribute("onerror") is None
        assert page.evaluate("document.querySelectorAll('#send, [name=input]').length") == 1
        up = answer.locator("img[alt=up]").get_attribute("src") or ""
        assert "api/workspace/raw?" in up
        refused = httpx.get(server.url + up)
        assert refused.status_code in (403, 404) and refused.content != png()
        run = answer.locator("a", has_text="run").get_attribute("href")
        assert not (run or "").startswith("javascript:")
        api = answer.locator("a", has_text="api").get_attribute("href") or ""
        assert api.startswith("api/workspace/raw?") and "path=api%2Fsessions" in api
        assert answer.locator("img[alt=q]").get_attribute("src") == "?x=1"  # not a path
        assert page.evaluate("window.__owned") is None


def test_a_file_tools_card_opens_its_file_in_the_files_panel(tmp_path: Path, pages: Pages) -> None:
    """As on 0.9.119, the card of a read_file / write_file / edit_file call has an action
    that opens the Files panel on that file, without folding or unfolding the card."""
    root = tmp_path / "proj"
    root.mkdir()
    ws = Workspace.local(str(root), mode="coding")
    model = ScriptedProvider(
        [
            call("write_file", {"path": "notes/hello.md", "content": "# Hello\nfrom the agent\n"}),
            text("written"),
        ]
    )
    agents = {"bot": Agent(name="bot", model=model, workspace=ws)}
    with Server(tmp_path / "lovia.db", agents=agents) as server:
        page = pages.open(server.url)
        send(page, "write a note")
        wait_idle(page)
        card = page.locator("[data-testid=tool-call][data-tool=write_file]")
        opener = card.locator("[data-testid=tool-open-file]")
        opener.click()
        dialog = page.locator("[data-testid=files-dialog]")
        preview = dialog.locator("[data-testid=files-markdown]")
        preview.wait_for()
        assert preview.locator("h1").inner_text() == "Hello"
        assert dialog.locator(".files-preview-head strong").inner_text() == "notes/hello.md"
        # its folder is listed, and the card kept its state
        dialog.locator(".file-open", has_text="hello.md").wait_for()
        assert card.evaluate("(node) => node.open") is False


def test_the_files_button_counts_files_written_since_the_panel_was_opened(
    tmp_path: Path, pages: Pages
) -> None:
    """0.9.119's "new files" badge: a run that writes a file marks the Files button with a
    count, which opening the panel clears; files there before the page loaded do not count."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "old.txt").write_text("there before")
    ws = Workspace.local(str(root), mode="coding")
    model = ScriptedProvider(
        [
            call("write_file", {"path": "a.md", "content": "a"}, call_id="w1"),
            call("write_file", {"path": "b.md", "content": "b"}, call_id="w2"),
            text("two files"),
            text("nothing written"),
        ]
    )
    agents = {"bot": Agent(name="bot", model=model, workspace=ws)}
    with Server(tmp_path / "lovia.db", agents=agents) as server:
        page = pages.open(server.url)
        button = page.locator("#files-btn")
        button.wait_for()
        assert button.get_attribute("data-new-files") is None
        send(page, "write two")
        wait_idle(page)
        page.wait_for_selector("#files-btn[data-new-files='2']")
        assert "2 new" in (button.get_attribute("title") or "")
        button.click()
        page.locator("[data-testid=files-dialog] [data-testid=file]").first.wait_for()
        assert button.get_attribute("data-new-files") is None
        page.locator("[data-testid=dialog-close]").click()
        send(page, "and now?")
        wait_idle(page)
        page.wait_for_timeout(800)  # the count after the run ended has come back
        assert button.get_attribute("data-new-files") is None
