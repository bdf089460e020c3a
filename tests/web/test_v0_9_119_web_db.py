"""A database written by lovia 0.9.119's own ``lovia web`` (tests/fixtures/v0_9_119_web.sqlite,
made by make_v0_9_119_web.py) served by this ``lovia web``: its chats are listed with the
titles 0.9.119 gave them, their messages are there, and they can be continued."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..web_server import interrupt
from .conftest import decode

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v0_9_119_web.sqlite"
LOVIA = str(Path(sys.executable).with_name("lovia"))
CHAT_A = "eb8ab8a995674a02955d253ab5f12e5c"  # generated title, pinned, two turns
CHAT_B = "38cd99fb775340c9b27d1ca26b9987fb"  # renamed by the user to "Sums"
APP = """
from lovia import Agent
from lovia.testing import ScriptedProvider, text

agent = Agent(name="helper", instructions="Answer in one word.",
              model=ScriptedProvider([text("Berlin.")]))
"""


def titles_in(db: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT id, title, pinned FROM chat_sessions ORDER BY id").fetchall()
    return [(str(a), str(b), int(c)) for a, b, c in rows]


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path, list[str]]]:
    """``lovia web --app webapp:agent --port 0`` where 0.9.119 left ``.lovia/helper.db``
    (and no ``--db``): the base URL, the database and the banner. A parameter is a list of
    (SQL, arguments) run on the copy first."""
    (tmp_path / ".lovia").mkdir()
    db = tmp_path / ".lovia" / "helper.db"
    shutil.copyfile(FIXTURE, db)
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        for sql, args in getattr(request, "param", ()):
            conn.execute(sql, args)
    (tmp_path / "webapp.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOVIA_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    proc = subprocess.Popen(
        [LOVIA, "web", "--app", "webapp:agent", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        banner = [proc.stdout.readline() for _ in range(4)]
        assert banner[0].startswith("lovia web: open http://127.0.0.1:"), banner
        base = banner[0].split("open ")[1].strip().rstrip("/")
        for _ in range(300):
            try:
                httpx.get(f"{base}/healthz")
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.1)
        yield base, db, banner
    finally:
        interrupt(proc)
    assert proc.returncode == 0


def test_the_fixture_is_what_0_9_119_wrote() -> None:
    assert titles_in(FIXTURE) == [(CHAT_B, "Sums", 0), (CHAT_A, "France and Italy", 1)]


def test_a_0_9_119_database_is_found_and_its_chats_listed_with_their_titles(
    served: tuple[str, Path, list[str]],
) -> None:
    base, _, banner = served
    assert "chats and runs are stored in .lovia/helper.db" in banner[1]
    assert "lovia 0.9.119's file for agent 'helper'" in banner[2]
    chats = httpx.get(f"{base}/api/sessions").json()
    assert {c["id"]: c["title"] for c in chats} == {CHAT_A: "France and Italy", CHAT_B: "Sums"}
    assert {c["id"]: c["pinned"] for c in chats} == {CHAT_A: True, CHAT_B: False}
    assert chats[0]["id"] == CHAT_A  # pinned first, as 0.9.119 listed it
    a = httpx.get(f"{base}/api/sessions/{CHAT_A}").json()
    assert a["title"] == "France and Italy" and a["agent"] == "helper"
    said = [(m["role"], m["content"]) for m in a["entries"]]
    assert said == [
        ("user", "Capital of France?"),
        ("assistant", "Paris."),
        ("user", "And of Italy?"),
        ("assistant", "Rome."),
    ]
    b = httpx.get(f"{base}/api/sessions/{CHAT_B}").json()
    assert [m["content"] for m in b["entries"]] == ["What is 2+2?", "4."]


HOSTILE_TITLE = '<img src=x onerror="document.body.dataset.pwned=1">' + "long " * 100


@pytest.mark.parametrize(
    "served",
    [
        [
            ("UPDATE chat_sessions SET title = ? WHERE id = ?", (HOSTILE_TITLE, CHAT_A)),
            (
                "UPDATE chat_sessions SET title = CAST(x'53756d7300ff' AS TEXT) WHERE id = ?",
                (CHAT_B,),
            ),
        ]
    ],
    indirect=True,
)
def test_titles_0_9_119_could_not_have_written_are_cut_and_a_bad_byte_costs_only_itself(
    served: tuple[str, Path, list[str]],
) -> None:
    base, _, _ = served
    chats = {c["id"]: c["title"] for c in httpx.get(f"{base}/api/sessions").json()}
    assert chats == {CHAT_A: HOSTILE_TITLE[:120].strip(), CHAT_B: "Sums\ufffd"}


def test_a_0_9_119_chat_goes_on_here_keeps_its_title_and_can_be_renamed(
    served: tuple[str, Path, list[str]],
) -> None:
    base, db, _ = served
    before = titles_in(db)
    body = {"message": "And of Germany?", "session_id": CHAT_A}
    sent = httpx.post(f"{base}/api/chat/stream", json=body, timeout=30)
    events = decode(sent.text)
    assert events[-1]["event"] == "done", events[-1]
    a = httpx.get(f"{base}/api/sessions/{CHAT_A}").json()
    assert [m["content"] for m in a["entries"]][-2:] == ["And of Germany?", "Berlin."]
    assert a["title"] == "France and Italy"
    assert titles_in(db) == before  # the titles (generated or renamed) are kept
    renamed = httpx.patch(f"{base}/api/sessions/{CHAT_B}", json={"title": "Arithmetic"})
    assert renamed.json()["title"] == "Arithmetic"
    assert dict((i, t) for i, t, _ in titles_in(db))[CHAT_B] == "Arithmetic"


def test_our_own_database_wins_over_the_0_9_119_one(tmp_path: Path) -> None:
    """With both files there, the default stays .lovia/lovia.db (the one this lovia wrote)."""
    (tmp_path / ".lovia").mkdir()
    shutil.copyfile(FIXTURE, tmp_path / ".lovia" / "helper.db")
    (tmp_path / ".lovia" / "lovia.db").write_bytes(b"")
    (tmp_path / "webapp.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOVIA_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    proc = subprocess.Popen(
        [LOVIA, "web", "--app", "webapp:agent", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        banner = [proc.stdout.readline() for _ in range(3)]
    finally:
        interrupt(proc)
    assert "stored in .lovia/lovia.db" in banner[1], banner
    assert "0.9.119" not in "".join(banner)
