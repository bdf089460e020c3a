"""File I/O that cannot be steered elsewhere between the policy's check and the operation.

A path is judged once it is resolved, so the operation must then reach exactly that place.
Each open here walks the resolved path from ``/`` one directory at a time with
``O_NOFOLLOW``: a directory or file swapped for a symbolic link after the check makes the
open fail instead of following the link out. Only regular files are read or replaced (a FIFO
would block a read forever, a device could be endless or destructive). Writes go to a
temporary file beside the target and are renamed over it, so a reader in this or another
process sees the old file or the new one, never a part; the directory's ``flock`` makes
read-modify-write edits from several processes take turns.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from .errors import WorkspaceError

__all__ = [
    "Dir",
    "NotRegular",
    "locked_dir",
    "open_dir",
    "open_file",
    "read_prefix",
    "replace_file",
]

_CAN_WALK = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_PATH reaches a directory with search permission alone, as a path lookup does
_WALK = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | _DIRECTORY | _CLOEXEC


_ONLY_REGULAR = "only regular files are read or written here"


class NotRegular(WorkspaceError):
    """The path is a directory, FIFO, socket or device, not a regular file."""


def _moved(path: Path, exc: OSError) -> WorkspaceError:
    return WorkspaceError(
        f"{path} changed while it was being opened ({exc.strerror or exc})",
        hint="a link or directory on the way was replaced; look at the path again",
    )


class Dir:
    """An open directory: its resolved ``path`` and, where the platform has ``dir_fd``, a
    descriptor reached without following links (``fd``; ``None`` elsewhere)."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def stat(self, name: str) -> os.stat_result | None:
        """The entry ``name`` here (links not followed), or ``None``."""
        try:
            if self.fd is not None:
                return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return os.lstat(self.path / name)
        except FileNotFoundError:
            return None


def open_dir(path: Path, *, create: bool = False) -> Dir:
    """The directory ``path`` (resolved), reached without following links; ``create`` makes
    the missing directories on the way."""
    if not _CAN_WALK:
        if create:
            path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(path))
        return Dir(path, None)
    fd = os.open("/", _WALK)
    try:
        for name in path.parts[1:]:
            nxt = _open_child_dir(path, fd, name, create)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return Dir(path, fd)


def _open_child_dir(path: Path, fd: int, name: str, create: bool) -> int:
    flags = _WALK | _NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):  # made meanwhile by another writer
            os.mkdir(name, dir_fd=fd)
        return os.open(name, flags, dir_fd=fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise _moved(path, exc) from exc  # a link put where a directory was resolved
        raise


def open_file(path: Path) -> int:
    """A read descriptor of the regular file ``path`` (resolved), reached without following
    links; ``WorkspaceError`` for anything that is not a regular file."""
    if _CAN_WALK:
        parent = open_dir(path.parent)
        try:
            fd = os.open(
                path.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=parent.fd
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _moved(path, exc) from exc
            raise
        finally:
            parent.close()
    else:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY)
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(kind) else "a special file (FIFO, socket or device)"
        raise NotRegular(f"Not a file: {path} is {what}", hint=_ONLY_REGULAR)
    return fd


def read_prefix(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd``'s start (a file that grows is read no further)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@contextlib.contextmanager
def locked_dir(path: Path, *, create: bool = False) -> Iterator[Dir]:
    """The directory ``path``, opened as ``open_dir`` does and held under an exclusive
    ``flock`` (where ``fcntl`` exists) while one of its files is read, changed and replaced:
    writers in other processes take turns."""
    folder = open_dir(path, create=create)
    lock: int | None = None
    try:
        if folder.fd is not None:
            import fcntl

            lock = os.open(".", os.O_RDONLY | _DIRECTORY | _CLOEXEC, dir_fd=folder.fd)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder
    finally:
        if lock is not None:
            os.close(lock)  # closing the descriptor lets go of the lock
        folder.close()


def replace_file(folder: Dir, name: str, data: bytes, *, mode: int | None) -> None:
    """Write ``data`` to a temporary file in ``folder`` and rename it over ``name``; ``mode``
    keeps an existing file's permission bits (``None``: the default for a new file)."""
    tmp = f".{name[:100]}.{secrets.token_hex(4)}.lovia-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY | _CLOEXEC
    at = folder.fd
    fd = (
        os.open(tmp, flags, 0o666, dir_fd=at)
        if at is not None
        else os.open(folder.path / tmp, flags, 0o666)
    )
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None and os.chmod in os.supports_fd:
                os.chmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if at is not None:
            os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
        else:
            os.replace(folder.path / tmp, folder.path / name)
    except BaseException:
        with contextlib.suppress(OSError):
            if at is not None:
                os.unlink(tmp, dir_fd=at)
            else:
                os.unlink(folder.path / tmp)
        raise
