"""Reading, writing and editing text files: the work behind the session's file calls.

Plain functions on resolved paths, run in a worker thread; the session has already judged
the path. Reads take a bounded prefix of a regular file; writes and edits replace the file
atomically under its directory's lock (see ``_fs``).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from . import _fs
from .errors import FileTooLargeError, WorkspaceError
from .paths import ResolvedPath
from .types import EditResult, FileBytes, FileChange, FileContent, WorkspaceLimits

__all__ = ["edit_text", "read_bytes", "read_text", "write_text"]

_SNIFF_BYTES = 1024  # a NUL in the first KiB: binary
_SNIFF_CHARS = 4096
_MAX_REPLACED = 0.10  # more undecodable than this share of the head: another encoding


def not_a_file(rp: ResolvedPath, why: str = "no such file") -> WorkspaceError:
    return WorkspaceError(
        f"Not a file: {rp.display()} ({why})",
        hint="list_files shows what is there; paths are relative to the workspace root",
    )


def _open(rp: ResolvedPath) -> int:
    try:
        return _fs.open_file(rp.abs)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise not_a_file(rp) from exc
    except _fs.NotRegular as exc:
        raise not_a_file(rp, exc.message.split(" is ", 1)[-1]) from exc
    except PermissionError as exc:
        raise WorkspaceError(f"cannot read {rp.display()}: permission denied") from exc


def read_bytes(rp: ResolvedPath, max_bytes: int | None) -> FileBytes:
    fd = _open(rp)
    try:
        size = os.fstat(fd).st_size
        if max_bytes is not None and size > max_bytes:
            raise FileTooLargeError(
                f"{rp.display()} is {size} bytes (limit {max_bytes})",
                hint="make it smaller first, or read part of it",
            )
        data = _fs.read_prefix(fd, size if max_bytes is None else max_bytes + 1)
    finally:
        os.close(fd)
    if max_bytes is not None and len(data) > max_bytes:  # it grew while being read
        raise FileTooLargeError(f"{rp.display()} is over {max_bytes} bytes (limit {max_bytes})")
    return FileBytes(path=rp.display(), data=data)


def _decode(rp: ResolvedPath, data: bytes, *, partial: bool) -> str:
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise WorkspaceError(
            f"Binary file: {rp.display()} is not text",
            hint="look at it through the shell instead (file, xxd, strings, ...)",
        )
    if partial:  # cut mid-character: drop the incomplete tail rather than show U+FFFD
        cut = len(data)
        while cut > max(0, len(data) - 4) and (data[cut - 1] & 0xC0) == 0x80:
            cut -= 1
        if cut and data[cut - 1] >= 0xC0:
            data = data[: cut - 1]
    text = data.decode("utf-8", errors="replace")
    head = text[:_SNIFF_CHARS]
    if head and head.count("\ufffd") > _MAX_REPLACED * len(head):
        raise WorkspaceError(
            f"Not UTF-8: {rp.display()} is in another encoding",
            hint="convert a copy through the shell, e.g. iconv -f GBK -t UTF-8 file",
        )
    return text


def _lines(text: str) -> list[str]:
    """Lines with their endings kept; only ``\\n`` ends a line (``\\r\\n`` stays whole)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def read_text(
    rp: ResolvedPath, start: int | None, end: int | None, limits: WorkspaceLimits
) -> FileContent:
    if (start is not None and start < 1) or (end is not None and end < 1):
        raise WorkspaceError("start and end are 1-based line numbers", hint="start=1 is the top")
    if start is not None and end is not None and end < start:
        raise WorkspaceError(f"end ({end}) is before start ({start})")
    fd = _open(rp)
    try:
        size = os.fstat(fd).st_size
        data = _fs.read_prefix(fd, limits.max_file_read_bytes + 1)
    finally:
        os.close(fd)
    partial = len(data) > limits.max_file_read_bytes
    if partial:
        data = data[: limits.max_file_read_bytes]
    lines = _lines(_decode(rp, data, partial=partial))
    total = len(lines)
    first = start or 1
    if first > total:
        return FileContent(path=rp.display(), content="", start=first, end=total, total_lines=total)
    last = min(end or total, total)
    content, last, clipped = _fit(lines, first, last, limits.max_file_read_chars)
    truncated = clipped or last < total or partial
    if partial:
        content += (
            f"\n[... only the leading portion of this file was read: its first "
            f"{len(data):,} of {max(size, len(data)):,} bytes ...]"
        )
    return FileContent(
        path=rp.display(),
        content=content,
        start=first,
        end=last,
        total_lines=total,
        truncated=truncated,
    )


def _fit(lines: list[str], first: int, last: int, budget: int) -> tuple[str, int, bool]:
    """Lines ``first``..``last`` as text within ``budget`` characters: whole lines while they
    fit (a first line longer than the budget is cut), then a notice saying where to go on."""
    taken: list[str] = []
    used = 0
    n = first
    while n <= last and used + len(lines[n - 1]) <= budget:
        taken.append(lines[n - 1])
        used += len(lines[n - 1])
        n += 1
    if n > last:
        return "".join(taken), last, False
    if not taken:  # one line longer than the whole budget
        line = lines[first - 1]
        notice = (
            f"\n[... truncated: line {first} is {len(line):,} characters, showing the "
            f"first {budget:,}; read it through the shell (cut -c) for the rest ...]"
        )
        return line[:budget] + notice, first, True
    shown = n - 1
    notice = (
        f"[... truncated: showing lines {first}-{shown} of {last}; continue with "
        f"start={shown + 1} ...]"
    )
    return "".join(taken) + notice, shown, True


def _existing_mode(folder: _fs.Dir, rp: ResolvedPath) -> tuple[bool, int | None]:
    """Whether the target exists, and its permission bits; refuses non-regular targets."""
    st = folder.stat(rp.abs.name)
    if st is None:
        return False, None
    if stat.S_ISDIR(st.st_mode):
        raise WorkspaceError(
            f"{rp.display()} is a directory", hint="give a file path inside it to write"
        )
    if not stat.S_ISREG(st.st_mode):
        raise WorkspaceError(
            f"Not a file: {rp.display()} is a link or special file; it is left as it is",
            hint="only regular files are written here",
        )
    return True, stat.S_IMODE(st.st_mode)


def write_text(rp: ResolvedPath, root: Path, content: str, create_only: bool) -> FileChange:
    if rp.abs == root:
        raise WorkspaceError(
            "Cannot write the workspace root as a file", hint="give a file path inside it"
        )
    data = content.encode("utf-8")
    try:
        with _fs.locked_dir(rp.abs.parent, create=True) as folder:
            exists, mode = _existing_mode(folder, rp)
            if exists and create_only:
                return FileChange(
                    ok=False,
                    path=rp.display(),
                    action="unchanged",
                    message=f"{rp.display()} already exists; create_only=true leaves it as is",
                )
            _fs.replace_file(folder, rp.abs.name, data, mode=mode)
    except (FileExistsError, NotADirectoryError) as exc:
        raise WorkspaceError(
            f"cannot write {rp.display()}: a file stands where a directory is needed"
        ) from exc
    except PermissionError as exc:
        raise WorkspaceError(f"cannot write {rp.display()}: permission denied") from exc
    return FileChange(
        path=rp.display(), action="updated" if exists else "created", bytes_written=len(data)
    )


def edit_text(rp: ResolvedPath, old: str, new: str, replace_all: bool) -> EditResult:
    path = rp.display()
    if not old:
        return EditResult(ok=False, path=path, message="old text must not be empty")
    try:
        with _fs.locked_dir(rp.abs.parent) as folder:
            fd = _open(rp)
            try:
                raw = _fs.read_prefix(fd, os.fstat(fd).st_size)
                mode = stat.S_IMODE(os.fstat(fd).st_mode)
            finally:
                os.close(fd)
            return _edit(folder, rp, raw, mode, old, new, replace_all)
    except FileNotFoundError as exc:
        raise not_a_file(rp) from exc
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ENOENT):
            raise not_a_file(rp) from exc
        raise WorkspaceError(f"cannot edit {path}: {exc.strerror or exc}") from exc


def _edit(
    folder: _fs.Dir,
    rp: ResolvedPath,
    raw: bytes,
    mode: int,
    old: str,
    new: str,
    replace_all: bool,
) -> EditResult:
    path = rp.display()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return EditResult(
            ok=False,
            path=path,
            message=f"{path} is not valid UTF-8 text; it was left unchanged "
            "(edit it through the shell, or convert it first)",
        )
    count = text.count(old)
    if count == 0 and "\n" in old and "\r\n" not in old and "\r\n" in text:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # a CRLF file
        count = text.count(old)
    if count == 0:
        return EditResult(
            ok=False,
            path=path,
            message=f"old text not found in {path}; read the file and copy the text exactly",
        )
    if count > 1 and not replace_all:
        return EditResult(
            ok=False,
            path=path,
            replacements=count,
            message=f"old text occurs {count} times in {path}; include more surrounding "
            "lines to make it unique, or pass replace_all=true",
        )
    if old == new:
        return EditResult(ok=True, path=path, replacements=count, changed=False)
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    _fs.replace_file(folder, rp.abs.name, updated.encode("utf-8"), mode=mode)
    return EditResult(ok=True, path=path, replacements=count, changed=True)
