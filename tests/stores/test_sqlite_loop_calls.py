"""Short SQLite calls run on the event loop's thread, yet the loop never waits long for a lock,
calls stay in order, reads leave a read-only file alone and the ``-wal`` file stays bounded
(issue 18). Responsiveness is counted in loop ticks of a concurrent task, never timed."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lovia.checkpointer import RunHead
from lovia.stores import SQLiteCheckpointer, SQLiteSession, _sqlite_inline
from lovia.transcript import AssistantTextEntry, InputEntry, TranscriptEntry

HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN " + sys.argv[2])
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
print("released", flush=True)
"""


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


@contextmanager
def locked_by_another_process(path: Path, how: str) -> Iterator[subprocess.Popen[str]]:
    """Another process holds ``BEGIN <how>`` on ``path`` until the block's caller releases."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"
        yield proc


def release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "released"


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def size_of(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


async def ticks_while_pending(call: asyncio.Task[object], ticks: int) -> int:
    """Let the loop turn ``ticks`` times; returns how many of them found ``call`` pending."""
    pending = 0
    for _ in range(ticks):
        await asyncio.sleep(0)
        pending += not call.done()
    return pending


async def test_a_wal_save_meeting_a_lock_leaves_the_loop_running_and_lands_later(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    async with SQLiteCheckpointer(path, wal=True) as cp:
        await cp.append("r", [user("before")], RunHead("a"))  # opened: next calls may run here
        with locked_by_another_process(path, "IMMEDIATE") as proc:
            save = asyncio.create_task(cp.append("r", [user("after")], RunHead("a", turns=1)))
            # the loop keeps turning while the save waits for the other process's lock
            assert await ticks_while_pending(save, 200) == 200
            release(proc)
            await save
        snap = await cp.load("r")
        assert snap is not None
        assert [e.content for e in snap.entries] == ["before", "after"]  # type: ignore[union-attr]
        assert snap.turns == 1


async def test_a_wal_save_waiting_longer_than_the_loop_polls_lands_after(tmp_path: Path) -> None:
    """A save tries again from the loop for a short while, then waits on a thread: a lock
    held well past that still lets the loop turn, and the save lands once it is released."""
    path = tmp_path / "long-lock.db"
    async with SQLiteSession(path, wal=True) as session:
        await session.append("s", [user("before")], run_id="r0")
        with locked_by_another_process(path, "IMMEDIATE") as proc:
            save = asyncio.create_task(session.append("s", [user("after")], run_id="r1"))
            await asyncio.sleep(_sqlite_inline.LOCK_POLL_BUDGET_S * 3)
            assert await ticks_while_pending(save, 200) == 200
            release(proc)
            await save
        assert [e.content for e in await session.load("s")] == ["before", "after"]  # type: ignore[union-attr]


async def test_a_save_cancelled_while_it_waits_for_a_lock_writes_nothing(tmp_path: Path) -> None:
    """Cancelling a save that waits for another writer's lock leaves nothing written, and
    the store's next calls run as usual."""
    path = tmp_path / "cancelled.db"
    async with SQLiteCheckpointer(path, wal=True) as cp:
        await cp.append("r", [user("0")], RunHead("a"))
        with locked_by_another_process(path, "IMMEDIATE") as proc:
            save = asyncio.create_task(cp.append("r", [user("cancelled")], RunHead("a")))
            assert await ticks_while_pending(save, 20) == 20
            save.cancel()
            await asyncio.gather(save, return_exceptions=True)
            assert save.cancelled()
            release(proc)
        await cp.append("r", [user("1")], RunHead("a", turns=1))
        snap = await cp.load("r")
        assert snap is not None and snap.turns == 1
        assert [e.content for e in snap.entries] == ["0", "1"]  # type: ignore[union-attr]


async def test_a_read_meeting_an_exclusive_lock_leaves_the_loop_running(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    async with SQLiteCheckpointer(path) as cp:  # default journal: a writer locks readers out
        await cp.append("r", [user("kept")], RunHead("a"))
        with locked_by_another_process(path, "EXCLUSIVE") as proc:
            read = asyncio.create_task(cp.load("r"))
            assert await ticks_while_pending(read, 200) == 200
            release(proc)
            snap = await read
        assert snap is not None and [e.content for e in snap.entries] == ["kept"]  # type: ignore[union-attr]


async def test_calls_keep_their_order_when_some_wait_on_a_thread(tmp_path: Path) -> None:
    """Saves made while earlier ones wait for a lock queue behind them; later ones, made when
    the store is idle again, run at once: every save lands in the order it was made."""
    path = tmp_path / "order.db"
    async with SQLiteCheckpointer(path, wal=True) as cp:
        await cp.append("r", [user("0")], RunHead("a"))
        saves = []
        with locked_by_another_process(path, "IMMEDIATE") as proc:
            for i in range(1, 11):
                saves.append(asyncio.create_task(cp.append("r", [user(str(i))], RunHead("a"))))
                await asyncio.sleep(0)
            release(proc)
            for i in range(11, 41):  # made while the queued ones drain, and after
                saves.append(asyncio.create_task(cp.append("r", [user(str(i))], RunHead("a"))))
                await asyncio.sleep(0)
            await asyncio.gather(*saves)
        loaded = await asyncio.gather(cp.load("r"), cp.load("r"))
        for snap in loaded:
            assert snap is not None
            assert [e.content for e in snap.entries] == [str(i) for i in range(41)]  # type: ignore[union-attr]


async def test_a_long_first_session_read_leaves_the_loop_running(tmp_path: Path) -> None:
    """Reading a long session the first time decodes every row: that happens on a thread,
    so a concurrent task keeps turning (with the work on the loop it could not turn once)."""
    path = tmp_path / "long.db"
    async with SQLiteSession(path, wal=True) as writer:
        for run in range(40):
            entries: list[TranscriptEntry] = [
                user(f"question {run}.{i} " * 10)
                if i % 2 == 0
                else AssistantTextEntry(content=f"answer {run}.{i} " * 20)
                for i in range(100)
            ]
            await writer.append("long", entries, run_id=f"run-{run}")
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        async with SQLiteSession(path, wal=True) as reader:
            assert await reader.load("other") == []  # opened: the next calls may run here
            load = asyncio.create_task(reader.load("long"))
            await asyncio.sleep(0)  # the load starts
            turned = 0
            while not load.done():
                await asyncio.sleep(0)
                turned += 1
            assert len(await load) == 4000
            assert turned > 1
            again = await reader.load("long")  # cached now: the new rows only
            assert again == await load
    finally:
        sys.setswitchinterval(old)


async def test_reads_leave_a_read_only_wal_file_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    async with SQLiteCheckpointer(path, wal=True) as cp:
        await cp.append("r", [user("one")], RunHead("a"))
        await cp.append("r", [user("two")], RunHead("a", turns=1))
    before = digests(tmp_path)
    async with SQLiteCheckpointer(path, read_only=True) as ro:
        for _ in range(20):  # the first opens on a thread, the rest run on the loop
            snap = await ro.load("r")
            assert snap is not None and snap.turns == 1
            assert len(await ro.list_run_heads()) == 1
    after = digests(tmp_path)
    assert after == before


async def test_the_wal_file_stays_bounded_over_many_saves(tmp_path: Path) -> None:
    """Saves run on the loop do not fold the ``-wal`` file in at commit; it is folded on a
    thread every few hundred writes instead, so it does not grow with the run (unfolded, it
    would hold at least one 4 KiB page per save)."""
    path = tmp_path / "wal.db"
    saves = 8000
    async with SQLiteCheckpointer(path, wal=True) as cp:
        biggest = 0
        for i in range(saves):
            await cp.append("r", [user(f"step {i}")], RunHead("a", turns=i))
            if i % 50 == 0:
                await asyncio.sleep(0.001)  # a model turn's worth of waiting
                biggest = max(biggest, size_of(Path(f"{path}-wal")))
        snap = await cp.load("r")
        assert snap is not None and len(snap.entries) == saves
    assert biggest < saves * 4096 / 4


async def test_a_new_store_meeting_an_exclusive_lock_on_its_first_call_waits_on_a_thread(
    tmp_path: Path,
) -> None:
    """A store's first call may open its connection on the loop, but a lock held by another
    process sends it to a thread: the loop keeps turning and the read lands after."""
    path = tmp_path / "first.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("r", [user("kept")], RunHead("a"))
    with locked_by_another_process(path, "EXCLUSIVE") as proc:
        async with SQLiteCheckpointer(path) as fresh:
            read = asyncio.create_task(fresh.load("r"))
            assert await ticks_while_pending(read, 200) == 200
            release(proc)
            snap = await read
    assert snap is not None and [e.content for e in snap.entries] == ["kept"]  # type: ignore[union-attr]


def header_says_wal(path: Path) -> bool:
    head = path.read_bytes()[:20]
    return head[18] == 2 and head[19] == 2


async def test_a_wal_store_switches_a_journal_file_on_its_first_call(tmp_path: Path) -> None:
    """The first call of a ``wal=True`` store on a default-journal file switches it to WAL
    (that write needs a thread), even when the call is a read."""
    path = tmp_path / "switch.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("r", [user("one")], RunHead("a"))
    assert not header_says_wal(path)
    async with SQLiteCheckpointer(path, wal=True) as cp:
        snap = await cp.load("r")
        assert snap is not None and len(snap.entries) == 1
        assert header_says_wal(path)
        await cp.append("r", [user("two")], RunHead("a", turns=1))
    async with SQLiteCheckpointer(path, wal=True) as cp:
        snap = await cp.load("r")
        assert snap is not None and [e.content for e in snap.entries] == ["one", "two"]  # type: ignore[union-attr]


async def test_a_store_whose_file_holds_an_older_schema_migrates_on_its_first_read(
    tmp_path: Path,
) -> None:
    """A file of an earlier schema version is migrated by the first call, a read included."""
    import sqlite3

    path = tmp_path / "older.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("r", [user("kept")], RunHead("a", session_id="s"))
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX checkpoint_runs_session")
    conn.execute("UPDATE lovia_meta SET value = '1' WHERE key = 'schema:checkpoint'")
    conn.commit()
    conn.close()
    async with SQLiteCheckpointer(path, wal=True) as cp:
        snap = await cp.load("r")
        assert snap is not None and [e.content for e in snap.entries] == ["kept"]  # type: ignore[union-attr]
    conn = sqlite3.connect(path)
    try:
        version = conn.execute(
            "SELECT value FROM lovia_meta WHERE key = 'schema:checkpoint'"
        ).fetchone()[0]
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    finally:
        conn.close()
    assert version == "2" and "checkpoint_runs_session" in indexes
