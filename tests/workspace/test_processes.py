"""Runaway commands end: a timeout, a cancel, a kill or the session's close kills the whole
process group, grandchildren included; output floods stay within fixed memory and come back
cut (issue 29, security)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspaceLimits, WorkspacePolicy

from .conftest import assert_stopped, heartbeat_command, wait_for_beat

TRUSTED = WorkspacePolicy.trusted()


async def test_a_timeout_kills_the_command_and_its_children(root: Path) -> None:
    beat = root / "beat"
    async with LocalWorkspaceSession(root, policy=TRUSTED) as ws:
        result = await asyncio.wait_for(ws.run(heartbeat_command(beat), timeout=1.5), 20)
        assert result.timed_out and result.exit_code is None and not result.ok
        await assert_stopped(beat)


async def test_the_default_timeout_applies_to_every_command(root: Path) -> None:
    async with LocalWorkspaceSession(root, policy=TRUSTED, shell_timeout=1) as ws:
        result = await asyncio.wait_for(ws.run("sleep 30"), 20)
    assert result.timed_out


async def test_a_cancelled_call_kills_its_process_group(root: Path) -> None:
    beat = root / "beat"
    async with LocalWorkspaceSession(root, policy=TRUSTED) as ws:
        task = asyncio.create_task(ws.run(heartbeat_command(beat), timeout=60))
        await wait_for_beat(beat)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await assert_stopped(beat)


async def test_a_call_cancelled_while_its_process_starts_ends_the_group(root: Path) -> None:
    """A cancel that lands while the process is being started (forked, its pipes not yet
    connected) still ends the whole group, and the call ends: asyncio's own clean-up there
    kills only the shell and waits for the pipes the shell's children hold, for ever."""
    for spins in range(1, 12):  # the cancel lands a little later each time
        beat = root / f"beat{spins}"
        async with LocalWorkspaceSession(root, policy=TRUSTED) as ws:
            task = asyncio.create_task(ws.run(heartbeat_command(beat), timeout=60))
            for _ in range(spins):
                await asyncio.sleep(0)
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=20)
            assert done, f"the cancelled call never ended (cancelled after {spins} steps)"
        await assert_stopped(beat)


async def test_kill_and_close_end_background_groups(root: Path) -> None:
    one, two = root / "one", root / "two"
    ws = LocalWorkspaceSession(root, policy=TRUSTED)
    first = await ws.spawn(heartbeat_command(one))
    await ws.spawn(heartbeat_command(two))
    await wait_for_beat(one)
    await wait_for_beat(two)
    killed = await ws.kill_process(first.process_id)
    assert killed.status == "killed" and killed.exit_code == -9
    await assert_stopped(one)
    await ws.close()
    await assert_stopped(two)
    assert ws.background_processes() == []


async def test_a_flood_of_output_comes_back_cut(root: Path) -> None:
    limits = WorkspaceLimits(max_shell_output_chars=1000)
    async with LocalWorkspaceSession(root, policy=TRUSTED, limits=limits) as ws:
        result = await ws.run("seq 1 2000000; seq 1 100000 >&2")
        assert result.ok and result.truncated
        assert len(result.stdout) < 1300 and len(result.stderr) < 1300
        assert result.stdout.startswith("1\n2\n") and result.stdout.endswith("2000000\n")
        started = await ws.spawn("seq 1 2000000")
        for _ in range(400):
            got = await ws.read_process_output(started.process_id)
            assert len(got.output) <= 1000
            if got.status != "running":
                break
            await asyncio.sleep(0.05)
        assert got.status == "exited" and got.exit_code == 0


FLOOD = textwrap.dedent(
    """
    import asyncio, json, resource, sys
    from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy

    async def main():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        async with LocalWorkspaceSession(sys.argv[1], policy=WorkspacePolicy.trusted()) as ws:
            result = await ws.run("head -c 400000000 /dev/zero | tr '\\\\0' a")
            started = await ws.spawn("head -c 400000000 /dev/zero | tr '\\\\0' b")
            while (await ws.read_process_output(started.process_id)).status == "running":
                await asyncio.sleep(0.2)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"grew_kib": after - before, "chars": len(result.stdout)}))

    asyncio.run(main())
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_a_flood_of_output_keeps_memory_bounded(root: Path) -> None:
    """400 MB through a foreground and a background command: the process grows by a few MB."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOD, str(root)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["chars"] < 31_000
    assert figures["grew_kib"] < 64 * 1024, figures


async def test_reading_a_huge_file_reads_a_bounded_prefix(root: Path) -> None:
    big = root / "huge.log"
    with big.open("wb") as f:
        f.write(b"line\n" * 1000)
        f.truncate(2 * 1024**3)  # 2 GiB, sparse
    limits = WorkspaceLimits(max_file_read_bytes=100_000, max_grep_file_bytes=100_000)
    async with LocalWorkspaceSession(root, limits=limits) as ws:
        got = await ws.read_text("huge.log")
        assert got.truncated and "leading portion" in got.content
        assert len(got.content) < 60_000
        assert await ws.grep("line", path=".", glob="*.log") == []  # too big to search


async def test_an_unknown_process_id_lists_every_process_with_its_state(root: Path) -> None:
    # as 0.9.119: an exited process is listed too (its output can still be read)
    from lovia.workspace import WorkspaceError

    async with LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted()) as ws:
        done = await ws.spawn("echo finished")
        for _ in range(200):
            if (await ws.read_process_output(done.process_id)).status != "running":
                break
            await asyncio.sleep(0.02)
        running = await ws.spawn("sleep 30")
        with pytest.raises(WorkspaceError) as refused:
            await ws.read_process_output("nope")
        await ws.kill_process(running.process_id)
    message = str(refused.value)
    assert f"{done.process_id} (exited: echo finished)" in message
    assert f"{running.process_id} (running: sleep 30)" in message
