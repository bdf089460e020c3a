"""The copy that guards a file lovia 0.9.119 wrote while it is migrated: written next to it
(``PATH.0.9.119.bak``) through SQLite, checked row for row against the original, claimed
under a free name atomically (processes migrating at once never write or remove each
other's copy), and reused when one with the same rows is there already.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid

from ..errors import SchemaError, StoreError

__all__ = [
    "LEGACY_TABLES",
    "VERSION",
    "backup_path",
    "fingerprint",
    "recorded_backup",
    "reuse_or_write_backup",
    "tables_of",
    "write_backup",
]

LEGACY_TABLES = ("session_runs", "snapshot_heads", "snapshot_turns")
"""0.9.119's tables (beside ``lovia_schema``, its schema versions)."""
VERSION = "0.9.119"


def tables_of(conn: sqlite3.Connection, schema: str = "main") -> set[str]:
    """The tables of ``schema`` in the file behind ``conn``."""
    rows = conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")
    return {str(r[0]) for r in rows}


def backup_path(path: str) -> str:
    """Where the copy of the original goes: ``PATH.0.9.119.bak`` (numbered if taken)."""
    candidate = f"{path}.{VERSION}.bak"
    n = 1
    while os.path.exists(candidate):
        n += 1
        candidate = f"{path}.{VERSION}.{n}.bak"
    return candidate


def fingerprint(conn: sqlite3.Connection) -> str:
    """A digest of every 0.9.119 row, to check a copy against the original."""
    digest = hashlib.sha256()
    present = tables_of(conn)
    for table in (*LEGACY_TABLES, "lovia_schema"):
        if table not in present:
            continue
        digest.update(table.encode())
        for row in conn.execute(f"SELECT * FROM main.{table} ORDER BY 1, 2"):
            digest.update(repr(tuple(row)).encode("utf-8", "backslashreplace"))
    return digest.hexdigest()


def write_backup(conn: sqlite3.Connection, path: str) -> tuple[str, str]:
    """Copy the database (through SQLite, so a WAL's commits are in it) next to ``path``.

    The copy is written under a name no other process uses, checked, then given the first
    free ``PATH.0.9.119[.N].bak`` name atomically: processes migrating at once never write
    or remove each other's copy.
    """
    partial = f"{path}.{VERSION}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
    try:
        copy = sqlite3.connect(partial)
        try:
            try:
                conn.backup(copy)
                copy.execute("PRAGMA journal_mode = DELETE")
            except (sqlite3.Error, OSError) as exc:
                raise _unwritable(path, exc) from exc
            check = copy.execute("PRAGMA integrity_check").fetchone()[0]
            if check != "ok":
                raise SchemaError(
                    f"the copy of {path!r} failed SQLite's integrity check ({check})",
                    hint="the file was left as it was; check the disk, then migrate again",
                )
            digest = fingerprint(copy)
        finally:
            copy.close()
        with open(partial, "rb") as f:
            os.fsync(f.fileno())
        return _claim(partial, path), digest
    finally:
        for leftover in (partial, partial + "-journal"):
            if os.path.exists(leftover):
                os.remove(leftover)


def _remove_leftovers(path: str) -> None:
    """Remove the ``*.partial`` copies (and their ``-journal``) that an attempt killed or
    failed half way left next to ``path``; a copy whose process still runs is kept."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    stem = os.path.basename(path) + f".{VERSION}."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.startswith(stem) or not (
            name.endswith(".partial") or name.endswith(".partial-journal")
        ):
            continue
        pid_text = name[len(stem) :].split(".", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and _alive(int(pid_text)):
            continue  # another process is writing its copy right now
        try:
            os.remove(os.path.join(folder, name))
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, under another user
    return True


def _existing_backup(path: str, digest: str) -> str | None:
    """A backup of ``path`` already there whose 0.9.119 rows are the same as now."""
    candidate = f"{path}.{VERSION}.bak"
    n = 1
    while os.path.exists(candidate):
        try:
            copy = sqlite3.connect(f"file:{candidate}?mode=ro", uri=True)
            try:
                if fingerprint(copy) == digest:
                    return candidate
            finally:
                copy.close()
        except sqlite3.Error:
            pass  # not a readable copy: left alone, and not reused
        n += 1
        candidate = f"{path}.{VERSION}.{n}.bak"
    return None


def reuse_or_write_backup(conn: sqlite3.Connection, path: str) -> tuple[str, str, bool]:
    """The backup this migration keeps: one already there with the same rows (a failed
    attempt, or another process migrating at this moment, wrote it), else a new one; and
    whether this process wrote it (only then may it remove it). Leftovers of killed attempts
    go first."""
    _remove_leftovers(path)
    conn.execute("BEGIN")
    try:
        digest = fingerprint(conn)
    finally:
        conn.execute("ROLLBACK")
    found = _existing_backup(path, digest)
    if found is not None:
        return found, digest, False
    return (*write_backup(conn, path), True)


def recorded_backup(conn: sqlite3.Connection) -> str | None:
    """The backup's file name the finished migration recorded in ``lovia_meta``."""
    try:
        row = conn.execute(
            "SELECT value FROM main.lovia_meta WHERE key = ?", (f"migrated:{VERSION}",)
        ).fetchone()
        return str(json.loads(row[0]).get("backup")) if row else None
    except (sqlite3.Error, ValueError, AttributeError):
        return None


def _claim(partial: str, path: str) -> str:
    """Give ``partial`` the first free backup name, never replacing an existing file."""
    while True:
        target = backup_path(path)
        try:
            os.link(partial, target)
        except FileExistsError:
            continue  # another process took that name meanwhile
        except OSError:  # no hard links here: claim the name, then move the copy onto it
            try:
                with open(target, "xb"):
                    pass
            except FileExistsError:
                continue
            os.replace(partial, target)
        return target


def _unwritable(path: str, exc: BaseException) -> StoreError:
    """Why the copy of ``path`` could not be written, and what to do: a read-only place, a
    full disk, or a file-size limit (``ulimit -f``) smaller than the file."""
    import resource

    folder = os.path.dirname(os.path.abspath(path)) or "."
    size = os.path.getsize(path) if os.path.exists(path) else 0
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    try:
        stat = os.statvfs(folder)
        read_only = bool(stat.f_flag & os.ST_RDONLY) or not os.access(folder, os.W_OK)
        free = stat.f_bavail * stat.f_frsize
    except OSError:
        read_only, free = False, size
    if read_only:
        cause, fix = "its folder cannot be written (read-only)", "make the folder writable"
    elif limit != resource.RLIM_INFINITY and limit < 2 * size + 65536:
        cause = f"the process's file-size limit ({limit} bytes) is below what it needs"
        fix = "raise the limit ('ulimit -f unlimited') for the command that migrates"
    elif free < 2 * size + 65536:
        cause, fix = f"the disk has {free} bytes free", f"free at least {2 * size} bytes"
    else:
        cause, fix = str(exc), "check the disk and the folder's permissions"
    return StoreError(
        f"cannot migrate {path!r} (a lovia 0.9.119 file): the backup copy next to it could "
        f"not be written: {cause} ({exc}); the file was left as it was",
        hint=f"{fix}, then run 'lovia migrate {path}' again; a failed attempt leaves no copy",
    )
