"""Several processes on one workspace: their edits all land, and no reader ever sees a file
half written (issue 29)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

EDITOR = textwrap.dedent(
    """
    import asyncio, sys
    from lovia.workspace import LocalWorkspaceSession

    async def main(root, letter):
        async with LocalWorkspaceSession(root) as ws:
            for i in range(40):
                done = await ws.edit_text("shared.txt", f"{letter}{i}-", f"{letter.upper()}{i}+")
                assert done.ok, done.message

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)

READER = textwrap.dedent(
    """
    import asyncio, sys
    from lovia.workspace import LocalWorkspaceSession

    async def main(root, mode):
        async with LocalWorkspaceSession(root) as ws:
            for i in range(60):
                if mode == "write":
                    await ws.write_text("big.txt", ("AB"[i % 2]) * 200_000)
                else:
                    seen = (await ws.read_bytes("big.txt")).data
                    assert seen in (b"A" * 200_000, b"B" * 200_000), seen[:20] + b"..."

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def _all_of(*commands: list[str]) -> None:
    procs = [subprocess.Popen(c, stderr=subprocess.PIPE, text=True) for c in commands]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err


def test_edits_from_two_processes_all_land(root: Path) -> None:
    lines = [f"{c}{i}-" for i in range(40) for c in "ab"]
    (root / "shared.txt").write_text("\n".join(lines) + "\n")
    _all_of(
        [sys.executable, "-c", EDITOR, str(root), "a"],
        [sys.executable, "-c", EDITOR, str(root), "b"],
    )
    expected = [f"{c.upper()}{i}+" for i in range(40) for c in "ab"]
    assert (root / "shared.txt").read_text() == "\n".join(expected) + "\n"


def test_a_reader_in_another_process_never_sees_half_a_write(root: Path) -> None:
    (root / "big.txt").write_text("A" * 200_000)
    _all_of(
        [sys.executable, "-c", READER, str(root), "write"],
        [sys.executable, "-c", READER, str(root), "read"],
    )
    leftovers = [p.name for p in root.iterdir() if p.name.endswith(".lovia-tmp")]
    assert leftovers == []
