"""Listing and searching a directory tree: the work behind ``list_files`` and ``grep``.

Plain functions run in a worker thread. What may be seen is asked of ``judge`` (the policy's
read decision for a resolved path): denied entries are left out as if absent, and so is
anything a link leads to outside the root unless the policy allows reading it outright.
Walks never follow links into directories, skip hidden names unless asked, and read only
regular files (a FIFO met on the way is passed over, not opened).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from . import _fs
from .errors import WorkspaceError
from .paths import ResolvedPath
from .policy import Decision
from .types import ClippedList, DirEntry, GrepMatch, WorkspaceLimits

__all__ = ["Finder"]

Judge = Callable[[Path], Decision]


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in rel.split("/"))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regular expression over ``/``-separated paths: ``*`` and ``?`` stay in
    one segment, ``**`` spans any number of them, ``[...]`` is a class."""
    if not pattern or pattern.startswith("/") or pattern.strip("/") in (".", ".."):
        raise WorkspaceError(
            f"Invalid glob pattern {pattern!r}",
            hint="a pattern relative to path, such as '*.py' or '**/*.md'",
        )
    out: list[str] = []
    segments = pattern.strip("/").split("/")
    for n, seg in enumerate(segments):
        last = n == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        out.append(_segment_regex(seg) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _segment_regex(seg: str) -> str:
    parts: list[str] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            parts.append("[^/]*")
        elif c == "?":
            parts.append("[^/]")
        elif c == "[" and seg.find("]", i + 2) > 0:
            end = seg.find("]", i + 2)  # a ']' right after '[' belongs to the class
            body = seg[i + 1 : end].replace("\\", "\\\\")
            parts.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end
        else:
            parts.append(re.escape(c))
        i += 1
    return "".join(parts)


class Finder:
    """Lists and searches below one root with one policy's eyes."""

    def __init__(self, root: Path, judge: Judge, limits: WorkspaceLimits) -> None:
        self.root = root
        self.judge = judge
        self.limits = limits

    def _show(self, p: Path) -> str:
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            return p.as_posix()

    def _visible(self, p: Path, *, base_inside: bool) -> Path | None:
        """Where ``p`` leads, if it may be shown; ``None`` when it is denied, or (with
        ``base_inside``: a walk below the root) a link out of the root that the policy does
        not plainly allow."""
        try:
            target = p.resolve()
        except (OSError, RuntimeError):
            return None
        verdict = self.judge(target)
        if verdict == "deny":
            return None
        if base_inside and verdict != "allow" and not target.is_relative_to(self.root):
            return None
        return target

    def _entry(self, p: Path, target: Path) -> DirEntry:
        try:
            st = target.stat()
        except OSError:
            st = None
        is_dir = st is not None and stat.S_ISDIR(st.st_mode)
        link = self._show(target) if p.is_symlink() else None
        return DirEntry(
            path=self._show(p),
            is_dir=is_dir,
            size=None if st is None or is_dir else st.st_size,
            mtime=None if st is None else st.st_mtime,
            symlink_target=link,
        )

    def children(self, base: ResolvedPath, *, hidden: bool, cap: int) -> ClippedList[DirEntry]:
        found: list[DirEntry] = []
        with os.scandir(base.abs) as it:
            names = sorted(e.name for e in it)
        for name in names:
            if not hidden and name.startswith("."):
                continue
            p = base.abs / name
            target = self._visible(p, base_inside=False)  # a link is shown with its target
            if target is not None:
                found.append(self._entry(p, target))
        found.sort(key=lambda e: (not e.is_dir, e.path))
        return ClippedList(found[:cap], truncated=len(found) > cap)

    def matching(
        self, base: ResolvedPath, pattern: str, *, hidden: bool, cap: int
    ) -> ClippedList[DirEntry]:
        regex = glob_regex(pattern)
        depth = None if "**" in pattern else pattern.strip("/").count("/") + 1
        found: list[DirEntry] = []
        for p, rel in self._walk(base.abs, hidden=hidden, depth=depth, with_dirs=True):
            if not regex.match(rel):
                continue
            target = self._visible(p, base_inside=base.inside)
            if target is not None:
                found.append(self._entry(p, target))
                if len(found) > cap:
                    break
        found.sort(key=lambda e: e.path)
        return ClippedList(found[:cap], truncated=len(found) > cap)

    def _walk(
        self, base: Path, *, hidden: bool, depth: int | None, with_dirs: bool
    ) -> Iterator[tuple[Path, str]]:
        """``(path, path relative to base)`` below ``base``, in sorted order, pruning hidden
        and denied directories and never entering a link."""
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            here = Path(dirpath)
            rel_dir = here.relative_to(base).as_posix()
            level = 0 if rel_dir == "." else rel_dir.count("/") + 1
            prefix = "" if rel_dir == "." else rel_dir + "/"
            keep = []
            for d in sorted(dirnames):
                if (hidden or not d.startswith(".")) and self.judge(here / d) != "deny":
                    keep.append(d)
            dirnames[:] = keep if depth is None or level + 1 < depth else []
            names = sorted([*filenames, *(keep if with_dirs else ())])
            for name in names:
                if hidden or not name.startswith("."):
                    yield here / name, prefix + name

    def grep(
        self,
        regex: re.Pattern[str],
        base: ResolvedPath,
        *,
        glob: str | None,
        hidden: bool,
        cap: int,
    ) -> ClippedList[GrepMatch]:
        found: list[GrepMatch] = []
        if base.abs.is_file():  # the subject itself: already judged by the caller
            files: Iterator[tuple[Path, Path | None]] = iter([(base.abs, base.abs)])
        else:
            files = self._files(base, glob=glob, hidden=hidden)
        for p, target in files:
            if target is None:
                continue
            for n, line in self._lines(target):
                if regex.search(line):
                    text = line.strip()[: self.limits.max_grep_line_chars]
                    found.append(GrepMatch(path=self._show(p), line=n, text=text))
                    if len(found) > cap:
                        return ClippedList(found[:cap], truncated=True)
        return ClippedList(found)

    def _files(
        self, base: ResolvedPath, *, glob: str | None, hidden: bool
    ) -> Iterator[tuple[Path, Path | None]]:
        wanted = None if glob is None else glob_regex(glob)
        by_path = glob is not None and "/" in glob
        for p, rel in self._walk(base.abs, hidden=hidden, depth=None, with_dirs=False):
            if wanted is not None and not wanted.match(rel if by_path else p.name):
                continue
            yield p, self._visible(p, base_inside=base.inside)

    def _lines(self, path: Path) -> Iterator[tuple[int, str]]:
        """The numbered lines of a regular text file within the grep size limit; nothing for
        a binary, oversized, unreadable or special file."""
        try:
            fd = _fs.open_file(path)
        except (OSError, WorkspaceError):
            return
        try:
            if os.fstat(fd).st_size > self.limits.max_grep_file_bytes:
                return
            data = _fs.read_prefix(fd, self.limits.max_grep_file_bytes + 1)
        except OSError:
            return
        finally:
            os.close(fd)
        if b"\x00" in data[:1024] or len(data) > self.limits.max_grep_file_bytes:
            return
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        for n, line in enumerate(lines, 1):
            yield n, line.rstrip("\r")
