"""Issue 31's sidebar panels in Chromium against a real server, driven as a user would: the
Schedules dialog (create, run now, open its chat, pause, resume, delete), the Memory editor
(read, the meter's warning, save, what the agent reads next) and Settings (add a model with
its key write-only, duplicate, roles, search, skill directories). What the server sends back
is shown as text: markup in a schedule's prompt or a skill's description stays text."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent
from lovia.demo import demo_agent
from lovia.plugins.memory import Memory
from lovia.testing import ScriptedProvider, text
from lovia.web.api_config import ConfigFile

from .test_browser import Server
from .test_page_browser import Pages, browser, chat_id, pages

__all__ = ["browser", "pages"]  # the fixtures this module uses

PROBE = '<img src=x onerror="window.__owned=1"><b id="send">bold</b>'


def _settled(path: Path, check: Any) -> dict[str, Any]:
    """The config file once ``check`` holds for it: the page's status line still shows the
    previous save's "Saved" while the next request is on its way, so it proves nothing."""
    deadline = time.monotonic() + 15
    while True:
        doc: dict[str, Any] = json.loads(path.read_text())
        if check(doc) or time.monotonic() > deadline:
            return doc
        time.sleep(0.05)


def _async(coro: Any) -> Any:
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(asyncio.run(coro)))
    worker.start()
    worker.join()
    return out[0]


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Server]:
    with Server(tmp_path / "lovia.db") as running:
        yield running


def test_schedules_are_created_run_paused_resumed_and_deleted(
    pages: Pages, demo: Server, tmp_path: Path
) -> None:
    page = pages.open(demo.url)
    page.click("#schedules-btn")
    dialog = page.locator("[data-testid=schedules-dialog]")
    empty = dialog.locator("[data-testid=schedule-list] .panel-empty")
    empty.wait_for()
    assert empty.inner_text() == "No schedules yet."
    dialog.locator("[data-testid=schedule-prompt]").fill("calculate 6 * 7")
    dialog.locator("[data-testid=schedule-kind]").select_option("every")
    dialog.locator("[data-testid=schedule-expr]").fill("3600")
    dialog.locator("[data-testid=schedule-add]").click()
    item = dialog.locator("[data-testid=schedule]")
    item.wait_for()
    assert item.locator("[data-testid=schedule-input]").inner_text() == "calculate 6 * 7"
    assert "every 3600 s" in item.locator("[data-testid=schedule-state]").inner_text()
    assert "next" in item.locator("[data-testid=schedule-state]").inner_text()
    # a bad trigger is refused by the server and said in the dialog; nothing is added
    dialog.locator("[data-testid=schedule-prompt]").fill("never")
    dialog.locator("[data-testid=schedule-expr]").fill("0")
    dialog.locator("[data-testid=schedule-add]").click()
    page.wait_for_selector("[data-testid=panel-status].error")
    assert item.count() == 1
    # run now: the schedule's chat answers in the background; its last chat opens
    item.locator("[data-testid=schedule-run]").click()
    item.locator("[data-testid=schedule-open]").wait_for()
    page.screenshot(path=str(tmp_path / "schedules.png"))
    item.locator("[data-testid=schedule-open]").click()
    dialog.wait_for(state="detached")
    page.wait_for_selector("[data-testid=answer]:has-text('42')")
    fired = chat_id(page)
    assert [s.run_id for s in demo.segments(fired)]
    # edit: the form takes the schedule's values; Save changes it in place
    page.click("#schedules-btn")
    item = page.locator("[data-testid=schedules-dialog] [data-testid=schedule]")
    item.locator("[data-testid=schedule-edit]").click()
    form = page.locator("[data-testid=schedules-dialog]")
    assert form.locator("[data-testid=schedule-prompt]").input_value() == "calculate 6 * 7"
    assert form.locator("[data-testid=schedule-expr]").input_value() == "3600"
    form.locator("[data-testid=schedule-prompt]").fill("what time is it?")
    form.locator("[data-testid=schedule-expr]").fill("7200")
    form.locator("[data-testid=schedule-add]").click()
    page.wait_for_selector("[data-testid=schedule-input]:has-text('what time is it?')")
    assert "every 7200 s" in item.locator("[data-testid=schedule-state]").inner_text()
    assert item.count() == 1
    import httpx

    (stored,) = httpx.get(f"{demo.url}api/schedules").json()
    assert (stored["input"], stored["trigger_expr"]) == ("what time is it?", "7200")
    # its history: the fire from Run now, which opens its chat
    item.locator("[data-testid=schedule-history-toggle]").click()
    record = item.locator("[data-testid=schedule-run-record]")
    record.wait_for()
    assert record.count() == 1 and "completed" in record.inner_text()
    record.locator("[data-testid=schedule-run-open]").click()
    page.wait_for_function(f"location.hash.includes({fired!r})")
    page.click("#schedules-btn")
    item = page.locator("[data-testid=schedules-dialog] [data-testid=schedule]")
    # pause and resume, then delete
    item.locator("[data-testid=schedule-pause]").click()
    page.wait_for_selector("[data-testid=schedule].paused")
    assert "paused" in item.locator("[data-testid=schedule-state]").inner_text()
    item.locator("[data-testid=schedule-resume]").click()
    page.wait_for_selector("[data-testid=schedule]:not(.paused)")
    page.once("dialog", lambda d: d.accept())
    item.locator("[data-testid=schedule-delete]").click()
    page.wait_for_selector("[data-testid=schedules-dialog] .panel-empty")
    assert httpx.get(f"{demo.url}api/schedules").json() == []


def test_a_schedule_gets_a_stop_condition_most_runs_and_an_expiry(
    pages: Pages, demo: Server
) -> None:
    """0.9.119's form sets a schedule's stop condition, its most fires and its expiry, and
    its list shows them; an edit that empties a limit clears it."""
    import httpx

    page = pages.open(demo.url)
    page.click("#schedules-btn")
    dialog = page.locator("[data-testid=schedules-dialog]")
    dialog.locator("[data-testid=schedule-list] .panel-empty").wait_for()
    dialog.locator("[data-testid=schedule-prompt]").fill("check the build")
    dialog.locator("[data-testid=schedule-until-input]").fill("the log says <b>ready</b>")
    dialog.locator("[data-testid=schedule-max-fires]").fill("5")
    dialog.locator("[data-testid=schedule-expires]").fill("2099-01-02T09:30")
    dialog.locator("[data-testid=schedule-add]").click()
    item = dialog.locator("[data-testid=schedule]")
    item.wait_for()
    (stored,) = httpx.get(f"{demo.url}api/schedules").json()
    assert (stored["until"], stored["max_fires"]) == ("the log says <b>ready</b>", 5)
    expires = page.evaluate("new Date('2099-01-02T09:30').getTime() / 1000")
    assert stored["expires_at"] == pytest.approx(expires)
    state = item.locator("[data-testid=schedule-state]").inner_text()
    assert "0/5 fires" in state and "expires" in state
    until = item.locator("[data-testid=schedule-until]")
    assert until.inner_text() == "stops when: the log says <b>ready</b>"
    assert until.locator("b").count() == 0
    # Edit shows the limits; emptying two of them clears them on the server
    item.locator("[data-testid=schedule-edit]").click()
    assert dialog.locator("[data-testid=schedule-max-fires]").input_value() == "5"
    assert dialog.locator("[data-testid=schedule-expires]").input_value() == "2099-01-02T09:30"
    dialog.locator("[data-testid=schedule-max-fires]").fill("")
    dialog.locator("[data-testid=schedule-expires]").fill("")
    dialog.locator("[data-testid=schedule-add]").click()
    page.wait_for_function(
        "!document.querySelector('[data-testid=schedule-state]').innerText.includes('/5')"
    )
    (stored,) = httpx.get(f"{demo.url}api/schedules").json()
    assert (stored["until"], stored["max_fires"], stored["expires_at"]) == (
        "the log says <b>ready</b>",
        None,
        None,
    )
    # a bad number is said, not sent
    item.locator("[data-testid=schedule-edit]").click()
    dialog.locator("[data-testid=schedule-max-fires]").fill("0")
    dialog.locator("[data-testid=schedule-add]").click()
    page.wait_for_selector("[data-testid=panel-status].error")
    assert httpx.get(f"{demo.url}api/schedules").json()[0]["max_fires"] is None


def test_the_open_schedules_dialog_follows_a_run_to_its_end(pages: Pages, tmp_path: Path) -> None:
    """Run now on a slow answer: the dialog, left open, shows the run finished (its state
    and its open history), as 0.9.119's follows runs while open, without being reopened."""
    import httpx

    with Server(tmp_path / "slow.db", agents=demo_agent(delay=0.25)) as slow:
        made = httpx.post(
            f"{slow.url}api/schedules",
            json={"input": "hello there", "trigger_kind": "every", "trigger_expr": "3600"},
        )
        assert made.status_code == 200, made.text
        page = pages.open(slow.url)
        page.click("#schedules-btn")
        item = page.locator("[data-testid=schedules-dialog] [data-testid=schedule]")
        item.locator("[data-testid=schedule-history-toggle]").click()
        item.locator("[data-testid=schedule-history] .panel-empty").wait_for()
        item.locator("[data-testid=schedule-run]").click()
        state = item.locator("[data-testid=schedule-state]")
        page.wait_for_function(
            "document.querySelector('[data-testid=schedule-state]').innerText"
            ".includes('last: running')"
        )
        page.wait_for_function(
            "document.querySelector('[data-testid=schedule-state]').innerText.includes('last: ok')",
            timeout=20_000,
        )
        assert "1 fire(s)" in state.inner_text()
        record = item.locator("[data-testid=schedule-run-record]")
        assert record.count() == 1 and "completed" in record.inner_text()
        # how long it took (a slow answer: a second or more) and its tokens
        assert re.search(r"completed · \d+ s · [\d,]+ tokens", record.inner_text())
        # the history that was open stays open
        assert page.locator("[data-testid=schedule-history]").is_visible()


def test_a_schedules_prompt_is_shown_as_text(pages: Pages, demo: Server) -> None:
    import httpx

    made = httpx.post(
        f"{demo.url}api/schedules",
        json={"input": PROBE, "trigger_kind": "every", "trigger_expr": "3600", "active": False},
    )
    assert made.status_code == 200, made.text
    page = pages.open(demo.url)
    page.click("#schedules-btn")
    shown = page.locator("[data-testid=schedule-input]")
    assert shown.inner_text() == PROBE
    assert shown.locator("img, b").count() == 0
    assert page.evaluate("window.__owned") is None
    assert page.evaluate("document.querySelectorAll('#send').length") == 1


@pytest.fixture
def remembering(tmp_path: Path) -> Iterator[tuple[Server, Memory]]:
    tidy = ScriptedProvider([text('{"notes": ["likes tea", "lives in Oslo (Norway)"]}')])
    memory = Memory(tmp_path / "mem", index=None, auto_curate=False, notes_budget=500, model=tidy)
    agents = {
        "bot": Agent(name="bot", model=ScriptedProvider([text("hi")] * 5), plugins=[memory]),
        "plain": Agent(name="plain", model=ScriptedProvider([text("hi")] * 5)),
    }
    with Server(tmp_path / "lovia.db", agents=agents) as running:
        yield running, memory


def test_the_memory_editor_reads_warns_and_saves_the_agents_notes(
    pages: Pages, remembering: tuple[Server, Memory], tmp_path: Path
) -> None:
    server, memory = remembering
    _async(memory.replace_notes("- likes tea"))
    page = pages.open(server.url)
    button = page.locator("#memory-btn")
    page.locator("#agent-switcher").select_option("plain")
    page.wait_for_selector("#memory-btn[hidden]", state="attached")  # no Memory, no editor
    page.locator("#agent-switcher").select_option("bot")
    page.wait_for_selector("#memory-btn:not([hidden])")
    button.click()
    editor = page.locator("[data-testid=memory-editor]")
    page.wait_for_selector("[data-testid=memory-editor]:not([disabled])")
    assert editor.input_value().strip().endswith("likes tea")
    meter = page.locator("[data-testid=memory-meter]")
    assert "/ 500" in meter.inner_text()
    editor.fill(editor.input_value().strip() + "\nnot a bullet\n- lives in Oslo")
    assert "1 line(s)" in meter.inner_text()  # warned before saving
    page.screenshot(path=str(tmp_path / "memory.png"))
    page.locator("[data-testid=memory-save]").click()
    page.wait_for_selector("[data-testid=memory-dialog]", state="detached")
    notes = _async(memory.notes_body())
    assert "lives in Oslo" in notes and "likes tea" in notes and "not a bullet" not in notes
    page.wait_for_selector("[data-testid=toast]")
    # Tidy up: one model call rewrites the notes; the editor shows the result
    button.click()
    page.wait_for_selector("[data-testid=memory-editor]:not([disabled])")
    page.locator("[data-testid=memory-dream]").click()
    page.wait_for_selector("[data-testid=panel-status]:has-text('2 → 2 notes')")
    tidied = page.locator("[data-testid=memory-editor]").input_value()
    assert "lives in Oslo (Norway)" in tidied and tidied == _async(memory.notes_body())
    assert "last tidied" in page.locator("[data-testid=memory-meter]").inner_text()


@pytest.fixture
def configured(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    path = tmp_path / "config.json"
    skills = tmp_path / "skills" / "greet"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(
        f"---\nname: greet\ndescription: Say hello {PROBE}\n---\nSay hello.\n", encoding="utf-8"
    )
    with Server(
        tmp_path / "lovia.db",
        agents=demo_agent(delay=0.02),
        config_runtime=ConfigFile(path=path, agent_name="demo"),
    ) as running:
        yield running, path


def test_settings_add_a_model_with_a_write_only_key_and_save_roles_search_and_skills(
    pages: Pages, configured: tuple[Server, Path], tmp_path: Path
) -> None:
    server, path = configured
    page = pages.open(server.url)
    page.click("#settings-btn")
    dialog = page.locator("[data-testid=settings-dialog]")
    dialog.locator("[data-testid=settings-tab-models]").click()  # it opens on General
    dialog.locator("[data-testid=model-list] .panel-empty").wait_for()
    dialog.locator("[data-testid=model-name-input]").fill("Main")
    dialog.locator("[data-testid=model-id-input]").fill("gpt-4o-mini")
    dialog.locator("[data-testid=model-base-input]").fill("http://127.0.0.1:9/v1")
    dialog.locator("[data-testid=model-key-input]").fill("sk-secret-123456789")
    dialog.locator("[data-testid=model-add]").click()
    profile = dialog.locator("[data-testid=model-profile]")
    profile.wait_for()
    shown = profile.inner_text()
    assert "Main (chat)" in shown and "gpt-4o-mini" in shown
    assert "sk-secret-123456789" not in page.content()  # the key is never sent back whole
    assert "key set" in shown
    doc = json.loads(path.read_text())
    assert doc["models"][0]["api_key"] == "sk-secret-123456789"
    assert doc["roles"]["chat"] == doc["models"][0]["id"]
    profile.locator("[data-testid=model-duplicate]").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=model-profile]').length === 2")
    copy_id = json.loads(path.read_text())["models"][1]["id"]
    # roles: the copy does the side work
    dialog.locator("[data-testid=settings-tab-roles]").click()
    dialog.locator("[data-testid=role-aux]").select_option(copy_id)
    dialog.locator("[data-testid=roles-save]").click()
    doc = _settled(path, lambda d: d["roles"].get("aux") == copy_id)
    assert doc["roles"]["aux"] == copy_id
    # search: the backend and a key
    dialog.locator("[data-testid=settings-tab-search]").click()
    dialog.locator("[data-testid=search-backend]").select_option("tavily")
    dialog.locator("[data-testid=search-key]").fill("tvly-abcdefgh1234")
    dialog.locator("[data-testid=search-save]").click()
    page.wait_for_function(
        "document.querySelector('[data-testid=search-backend]')?.value === 'tavily'"
    )
    search = _settled(path, lambda d: d.get("search", {}).get("backend") == "tavily")["search"]
    assert search == {"backend": "tavily", "tavily_api_key": "tvly-abcdefgh1234"}
    # skills: the directories, and what each holds (as text)
    dialog.locator("[data-testid=settings-tab-skills]").click()
    dirs = dialog.locator("[data-testid=skill-dirs]")
    dirs.wait_for()
    dirs.fill(str(tmp_path / "skills"))
    dialog.locator("[data-testid=skills-save]").click()
    skill = dialog.locator("[data-testid=skill]")
    skill.wait_for()
    assert skill.inner_text() == f"greet: Say hello {PROBE}"
    assert skill.locator("img, b").count() == 0 and page.evaluate("window.__owned") is None
    assert json.loads(path.read_text())["skills"] == {"dirs": [str(tmp_path / "skills")]}
    page.screenshot(path=str(tmp_path / "settings.png"))
    # a profile that is not the chat model can be deleted
    dialog.locator("[data-testid=settings-tab-models]").click()
    dialog.locator("[data-testid=model-profile]").nth(1).locator(
        "[data-testid=model-delete]"
    ).click()
    page.wait_for_function("document.querySelectorAll('[data-testid=model-profile]').length === 1")
    assert len(json.loads(path.read_text())["models"]) == 1


def test_panels_a_server_does_not_offer_are_not_shown(pages: Pages, demo: Server) -> None:
    page = pages.open(demo.url)
    # no config.json to edit: Settings holds General only
    page.click("#settings-btn")
    tabs = page.locator("[data-testid=settings-dialog] [role=tab]")
    assert tabs.all_inner_texts() == ["General"]
    page.locator("[data-testid=dialog-close]").click()
    assert page.locator("#memory-btn").is_hidden()  # the demo agent has no Memory
    assert page.locator("#schedules-btn").is_visible()
