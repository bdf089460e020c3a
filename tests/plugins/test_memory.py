"""Memory: Notes in MEMORY.md (0.9.119's format, written atomically and safely from several
processes), the archive in archive.db / vectors.db (0.9.119's tables), run-end curation,
recall, dreaming and the per-session Notes snapshot."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lovia import Agent, InMemorySession, Memory, Runner, UserError
from lovia.plugins import Doc, FileNotesStore, HybridIndex, KeywordIndex, VectorIndex
from lovia.testing import ScriptedProvider, call, text


def digest(*facts: str, stale: tuple[str, ...] = (), summary: str = "") -> str:
    return json.dumps({"facts": list(facts), "stale": list(stale), "summary": summary})


class Buckets:
    """A deterministic embedder: words of one bucket (dog, chien, 狗) land together."""

    id = "test:buckets"
    BUCKETS = (("dog", "chien", "狗", "puppy"), ("car", "voiture", "汽车"), ("tea", "thé"))

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [
            [float(any(w in t.lower() for w in b)) for b in self.BUCKETS] + [0.1] for t in texts
        ]


async def test_a_memory_folder_written_by_0_9_119_is_read_and_extended(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(
        "# My notes (edited by hand)\n- [2025-03] Prefers metric units\nnot a bullet\n"
    )
    db = sqlite3.connect(tmp_path / "archive.db")  # the tables 0.9.119 creates
    db.execute("CREATE TABLE lovia_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    db.execute(
        "CREATE VIRTUAL TABLE memory_fts USING fts5("
        "id UNINDEXED, text UNINDEXED, search, when_ts UNINDEXED, meta UNINDEXED)"
    )
    db.execute(
        "INSERT INTO memory_fts VALUES (?, ?, ?, ?, ?)",
        ("old:0", "We planned the Kyoto trip", "we planned the kyoto trip", 1.7e9, "{}"),
    )
    db.commit()
    db.close()
    memory = Memory(tmp_path, auto_curate=False, expand_query=False, summarize_recall=False)
    model = ScriptedProvider([call("recall", {"query": "kyoto"}), text("You went to Kyoto.")])
    result = await Runner.run(Agent(name="a", model=model, plugins=[memory]), "where?")
    assert "- [2025-03] Prefers metric units" in model.calls[0][0].text
    found = next(e for e in result.entries if e.type == "tool_result").output
    assert "We planned the Kyoto trip" in found
    assert await memory.remember("Lives in Lisbon")
    assert (tmp_path / "MEMORY.md").read_text().splitlines() == [
        "- [2025-03] Prefers metric units",
        f"- [{time.strftime('%Y-%m')}] Lives in Lisbon",
    ]
    rows = sqlite3.connect(tmp_path / "archive.db").execute("SELECT id FROM memory_fts").fetchall()
    assert {r[0] for r in rows} >= {"old:0", f"{result.run_id}:0", f"{result.run_id}:1"}


async def test_run_end_curation_writes_notes_and_a_summary(tmp_path: Path) -> None:
    model = ScriptedProvider(
        [
            call("remember", {"fact": "Prefers tea"}),
            text("Noted."),
            text(digest("User is vegetarian.", summary="Talked about food.")),
        ]
    )
    memory = Memory(tmp_path, expand_query=False, summarize_recall=False)
    result = await Runner.run(Agent(name="a", model=model, plugins=[memory]), "I'm vegetarian")
    notes = (tmp_path / "MEMORY.md").read_text()
    assert {line.split("] ", 1)[1] for line in notes.splitlines()} == {
        "Prefers tea",
        "User is vegetarian.",
    }
    asked = model.calls[2][-1].text
    assert "Prefers tea" in asked and "USER: I'm vegetarian" in asked
    hits = await KeywordIndex(tmp_path / "archive.db").search("food", k=5)
    assert [h.doc.id for h in hits] == [f"{result.run_id}:summary"]
    # a stale note found by the next digest is retired; a known fact is not added twice
    again = ScriptedProvider([text("ok"), text(digest("Prefers tea", stale=("Prefers tea",)))])
    await Runner.run(Agent(name="a", model=again, plugins=[memory]), "actually coffee")
    assert "tea" in (tmp_path / "MEMORY.md").read_text()  # re-added after retiring: one line
    assert (tmp_path / "MEMORY.md").read_text().count("tea") == 1


async def test_a_failed_digest_still_archives_the_messages(tmp_path: Path) -> None:
    model = ScriptedProvider([text("hello"), text("not json"), text("still not json")])
    memory = Memory(tmp_path)
    result = await Runner.run(Agent(name="a", model=model, plugins=[memory]), "hi there")
    assert result.output == "hello"
    hits = await KeywordIndex(tmp_path / "archive.db").search("hi there hello", k=5)
    assert sorted(h.doc.id for h in hits) == [f"{result.run_id}:0", f"{result.run_id}:1"]


async def test_notes_stay_pinned_within_a_session(tmp_path: Path) -> None:
    memory = Memory(tmp_path, index=None, auto_curate=False)
    session = InMemorySession()
    await memory.remember("first fact")
    seen = []
    for word in ("one", "two"):
        model = ScriptedProvider([text(word)])
        await Runner.run(
            Agent(name="a", model=model, plugins=[memory]), word, session=session, session_id="s"
        )
        seen.append(model.calls[0][0].text)
        await memory.remember(f"learned in {word}")
    assert "learned in one" not in seen[1]  # pinned: the prompt prefix stays the same
    await memory.replace_notes("- fresh start")
    model = ScriptedProvider([text("three")])
    await Runner.run(
        Agent(name="a", model=model, plugins=[memory]), "3", session=session, session_id="s"
    )
    assert "fresh start" in model.calls[0][0].text and "first fact" not in model.calls[0][0].text


async def test_remember_forget_and_replace(tmp_path: Path) -> None:
    memory = Memory(tmp_path, index=None)
    assert await memory.remember("  Likes   green tea. ")
    assert not await memory.remember("likes green tea")
    assert await memory.remember("[2020-01] Has a dog named Rex")
    assert not await memory.forget("cats")
    assert await memory.forget("dog named rex")
    body = await memory.replace_notes("- one\njunk\n- [2021-02] two\n- One")
    assert body.splitlines()[1:] == ["- [2021-02] two"] and body.startswith("- [")
    assert await memory.notes_body() == body
    with pytest.raises(UserError):
        Memory(tmp_path, index=KeywordIndex(tmp_path / "x.db"), embedder=Buckets())


async def test_dream_rewrites_notes_and_keeps_a_backup(tmp_path: Path) -> None:
    memory = Memory(tmp_path, index=None)
    assert memory.dreamed_at() is None  # a method, as in 0.9.119
    for fact in ("Likes tea", "Enjoys tea", "Lives in Paris"):
        await memory.remember(fact)
    before = (tmp_path / "MEMORY.md").read_text()
    rewrite = json.dumps({"notes": ["[2026-01] Likes tea", "[2026-01] Lives in Paris"]})
    assert await memory.dream(ScriptedProvider([text(rewrite)])) == (3, 2)
    assert (tmp_path / "MEMORY.md.bak").read_text() == before
    assert (
        tmp_path / "MEMORY.md"
    ).read_text() == "- [2026-01] Likes tea\n- [2026-01] Lives in Paris"
    assert memory.dreamed_at() is not None
    empty = json.dumps({"notes": []})
    assert await memory.dream(ScriptedProvider([text(empty)])) == (2, 2)  # never wiped


async def test_vectors_find_what_words_miss_and_reset_for_another_embedder(tmp_path: Path) -> None:
    keyword = KeywordIndex(tmp_path / "archive.db")
    vectors = VectorIndex(tmp_path / "vectors.db", Buckets())
    both = keyword | vectors
    assert isinstance(both, HybridIndex)
    await both.add([Doc(id="pet", text="I have a dog"), Doc(id="ride", text="my car broke")])
    assert [h.doc.id for h in await keyword.search("chien")] == []
    assert [h.doc.id for h in await both.search("chien", k=1)] == ["pet"]

    class Other(Buckets):
        id = "test:other"

    assert await VectorIndex(tmp_path / "vectors.db", Other()).search("dog") == []


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from lovia.plugins import FileNotesStore
    from lovia.plugins.memory.notes import stamp

    async def main():
        store = FileNotesStore(sys.argv[1])
        for i in range(25):
            await store.modify(lambda facts: facts + [stamp(f"fact {sys.argv[2]}-{i}")])

    asyncio.run(main())
    """
)


def test_several_processes_never_lose_each_others_facts(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    path = tmp_path / "mem" / "MEMORY.md"
    procs = [subprocess.Popen([sys.executable, str(script), str(path), str(n)]) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    lines = path.read_text().splitlines()
    assert len(lines) == 100 and len(set(lines)) == 100
    assert sorted(p.name for p in path.parent.iterdir()) == [".MEMORY.md.lock", "MEMORY.md"]


async def test_a_store_of_your_own_for_notes(tmp_path: Path) -> None:
    class Kept:
        def __init__(self) -> None:
            self.facts: list[str] = []

        async def load(self) -> list[str]:
            return list(self.facts)

        async def save(self, facts: list[str]) -> None:
            self.facts = list(facts)

    kept = Kept()
    memory = Memory(tmp_path, notes=kept, index=None)
    await memory.remember("uses a custom store")
    assert kept.facts[0].endswith("] uses a custom store")
    assert not (tmp_path / "MEMORY.md").exists()
    assert await FileNotesStore(tmp_path / "MEMORY.md").load() == []


async def test_auto_expansion_is_for_the_default_keyword_index_only(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "mine.db")
    await index.add([Doc(id="d1", text="my dog's name is Rex")])
    memory = Memory(tmp_path, index=index, auto_curate=False, summarize_recall=False)
    model = ScriptedProvider([call("recall", {"query": "dog name"}), text("Rex.")])
    result = await Runner.run(Agent(name="a", model=model, plugins=[memory]), "dog?")
    assert "Rex" in next(e for e in result.entries if e.type == "tool_result").output
    assert len(model.calls) == 2  # searched as asked: no query-expansion call in between
    assert not memory.lexical_only and not memory.should_expand()
    assert Memory(tmp_path / "d").should_expand()
    assert not Memory(tmp_path / "e", embedder=Buckets()).should_expand()
    assert Memory(tmp_path / "f", index=index, expand_query=True).should_expand()


async def test_notes_text_has_no_newline_after_the_last_fact(tmp_path: Path) -> None:
    memory = Memory(tmp_path, index=None)
    await memory.remember("[2024-05] one")
    await memory.remember("[2024-05] two")
    assert (tmp_path / "MEMORY.md").read_text() == "- [2024-05] one\n- [2024-05] two"
    assert await memory.notes_body() == "- [2024-05] one\n- [2024-05] two"
    assert await memory.replace_notes("- [2024-06] three\n") == "- [2024-06] three"


async def test_memory_errors_say_what_0_9_119_said(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not both"):
        Memory(tmp_path, index=KeywordIndex(tmp_path / "x.db"), embedder=Buckets())
    with pytest.raises(UserError, match="no model"):
        await Memory(tmp_path, index=None).dream()


async def test_notes_that_come_out_the_same_are_not_rewritten(tmp_path: Path) -> None:
    # a digest with no facts writes nothing (0.9.119 leaves MEMORY.md alone): the dream's
    # cadence reads the file's mtime as "Notes changed since the last dream"
    folder = tmp_path / "memory"
    model = ScriptedProvider([text("ok"), text(digest(summary="Small talk."))])
    agent = Agent(name="a", model=model, plugins=[Memory(folder, expand_query=False)])
    await Runner.run(agent, "Hello there.")
    assert not (folder / "MEMORY.md").exists()
    mem = Memory(folder)
    assert await mem.remember("Prefers tea")
    notes = folder / "MEMORY.md"
    os.utime(notes, (1_000_000, 1_000_000))  # a write would move it to now
    assert not await mem.remember("Prefers tea")  # known already
    assert not await mem.forget("nothing of the kind")
    assert notes.stat().st_mtime == 1_000_000
    notes.write_text(notes.read_text() + "\nnot a bullet\n")
    # a deliberate edit always writes the normalised body, even with the same facts
    await mem.replace_notes(await mem.notes_body())
    assert "not a bullet" not in notes.read_text()


async def test_side_queries_take_0_9_119_answers(tmp_path: Path) -> None:
    # a script written for 0.9.119 answers the dream with {"facts": [...]} and the query
    # expansion with {"terms": [...]}; each is one model call, and an empty answer is no change
    memory = Memory(tmp_path, auto_curate=False, summarize_recall=False)
    await memory.replace_notes("- [2024-01] Likes tea\n- [2024-02] Likes tea a lot")
    assert await memory.dream(ScriptedProvider([text("{}")])) == (2, 2)
    rewrite = ScriptedProvider([text(json.dumps({"facts": ["[2024-02] Likes tea a lot"]}))])
    assert await memory.dream(rewrite) == (2, 1)
    assert len(rewrite.calls) == 1
    assert await memory.notes_body() == "- [2024-02] Likes tea a lot"

    said = ScriptedProvider([text("The capital of Atlantis is Poseidonia.")])
    await Runner.run(Agent(name="a", model=said, plugins=[memory]), "Atlantis?")
    model = ScriptedProvider(
        [
            call("recall", {"query": "undersea city"}),
            text(json.dumps({"terms": ["Atlantis", "Poseidonia"]})),
            text("done"),
        ]
    )
    result = await Runner.run(Agent(name="a", model=model, plugins=[memory]), "the city?")
    found = next(e for e in result.entries if e.type == "tool_result").output
    assert "Poseidonia" in found and result.output == "done"
    assert len(model.calls) == 3
