"""Notes, the hot tier: a short list of facts, each ``[YYYY-MM] text``, kept in ``MEMORY.md``
as one ``- `` bullet per line (lines that are not bullets are ignored, so a person can edit
the file freely).

``FileNotesStore`` writes the file whole to a temporary file and renames it over the old one,
so a reader never sees half a file; ``modify`` holds an exclusive lock on a lock file beside
it for the whole read-change-write, so processes sharing the folder never lose each other's
facts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process per memory folder
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FileNotesStore",
    "NotesStore",
    "atomic_write",
    "fact_key",
    "format_facts",
    "normalize_fact",
    "parse_facts",
    "stamp",
    "this_month",
]

_STAMP = re.compile(r"^\[(\d{4}-\d{2})\]\s*")
_TRAILING_STAMP = re.compile(r"\s*\[(\d{4}-\d{2})\]$")
_BULLET = re.compile(r"^\s*[-*+]\s+")


@runtime_checkable
class NotesStore(Protocol):
    """Where Notes live: ``load`` and ``save`` a list of facts (each ``[YYYY-MM] text``).
    The plugin does the normalising, deduplicating and budgeting; a store only keeps the
    list."""

    async def load(self) -> list[str]: ...

    async def save(self, facts: list[str]) -> None: ...


def this_month() -> str:
    return time.strftime("%Y-%m")


def normalize_fact(text: str) -> str:
    """One line, no bullet, single spaces; a stamp written at the end moves to the front."""
    flat = " ".join(_BULLET.sub("", text.strip()).split())
    trailing = _TRAILING_STAMP.search(flat)
    if trailing and not _STAMP.match(flat):
        flat = f"[{trailing.group(1)}] {flat[: trailing.start()].rstrip()}"
    return flat


def bare(fact: str) -> str:
    """The fact without its stamp."""
    return _STAMP.sub("", fact, count=1)


def fact_key(fact: str) -> str:
    """What makes two facts the same: the text without stamp, case or final punctuation."""
    return " ".join(bare(normalize_fact(fact)).lower().rstrip(".!;,").split())


def stamp(fact: str, month: str | None = None) -> str:
    """``fact`` with a ``[YYYY-MM]`` stamp (its own if it has one, else this month's)."""
    fact = normalize_fact(fact)
    return fact if _STAMP.match(fact) else f"[{month or this_month()}] {fact}"


def month_of(fact: str) -> str | None:
    found = _STAMP.match(fact)
    return found.group(1) if found else None


def parse_facts(text: str) -> list[str]:
    """The facts of a MEMORY.md text: its bullet lines, in order."""
    out = []
    for line in text.splitlines():
        if _BULLET.match(line):
            fact = normalize_fact(line)
            if bare(fact):
                out.append(fact)
    return out


def format_facts(facts: list[str]) -> str:
    """The Notes body: one ``- fact`` line each, with no newline after the last (0.9.119's
    ``MEMORY.md`` bytes and ``notes_body()`` text)."""
    return "\n".join(f"- {f}" for f in facts)


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:  # the new file keeps the old one's permissions (a new one gets the umask's)
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes, held while the block runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class FileNotesStore:
    """Notes in a Markdown file (``MEMORY.md``), one ``- [YYYY-MM] fact`` per line."""

    def __init__(self, path: str | os.PathLike[str] = "./.lovia/memory/MEMORY.md") -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(f".{self.path.name}.lock")

    def __repr__(self) -> str:
        return f"FileNotesStore({str(self.path)!r})"

    def _read(self) -> list[str]:
        try:
            return parse_facts(self.path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            return []

    async def load(self) -> list[str]:
        return await asyncio.to_thread(self._read)

    async def save(self, facts: list[str]) -> None:
        def write() -> None:
            with file_lock(self.lock_path):
                atomic_write(self.path, format_facts(facts))

        await asyncio.to_thread(write)

    async def modify(self, change: Callable[[list[str]], list[str] | None]) -> list[str]:
        """Read, ``change(facts)`` and write back under the lock; ``change`` returns the new
        list, or ``None`` to leave the file alone. Returns the list as it now is."""

        def apply() -> list[str]:
            with file_lock(self.lock_path):
                facts = self._read()
                new = change(list(facts))
                if new is None:
                    return facts
                atomic_write(self.path, format_facts(new))
                return new

        return await asyncio.to_thread(apply)
