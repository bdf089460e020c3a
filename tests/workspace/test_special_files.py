"""Device files and FIFOs: nothing reads, greps or writes through them, and nothing hangs on
one (issue 29, security)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspaceError, WorkspacePolicy

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


async def test_reading_a_fifo_is_refused_at_once(root: Path) -> None:
    os.mkfifo(root / "pipe")
    async with LocalWorkspaceSession(root) as ws:
        with pytest.raises(WorkspaceError, match="Not a file"):
            await asyncio.wait_for(ws.read_text("pipe"), 10)
        with pytest.raises(WorkspaceError, match="Not a file"):
            await asyncio.wait_for(ws.read_bytes("pipe"), 10)


async def test_grep_passes_over_a_fifo(root: Path) -> None:
    os.mkfifo(root / "pipe.txt")
    async with LocalWorkspaceSession(root) as ws:
        hits = await asyncio.wait_for(ws.grep("hello"), 10)
    assert [(m.path, m.line) for m in hits] == [("notes.txt", 1)]


async def test_writing_onto_a_fifo_or_device_link_leaves_it_alone(root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / "zero").symlink_to("/dev/null")
    async with LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted()) as ws:
        with pytest.raises(WorkspaceError):
            await asyncio.wait_for(ws.write_text("pipe", "data"), 10)
        with pytest.raises(WorkspaceError):
            await asyncio.wait_for(ws.edit_text("pipe", "a", "b"), 10)
    assert (root / "pipe").is_fifo()


@pytest.mark.parametrize("device", [d for d in ("/dev/zero", "/dev/urandom") if os.path.exists(d)])
async def test_an_endless_device_is_not_read(root: Path, device: str) -> None:
    (root / "endless.txt").symlink_to(device)
    async with LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted()) as ws:
        for path in (device, "endless.txt"):
            with pytest.raises(WorkspaceError, match="Not a file"):
                await asyncio.wait_for(ws.read_text(path), 10)
            with pytest.raises(WorkspaceError, match="Not a file"):
                await asyncio.wait_for(ws.read_bytes(path), 10)
