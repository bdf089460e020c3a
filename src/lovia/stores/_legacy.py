"""SQLite files written by lovia 0.9.119: read them, and migrate them forward.

0.9.119 kept a session as one ``session_runs`` row per run and a checkpoint as one
``snapshot_heads`` row plus ``snapshot_turns`` rows, with its schema versions in
``lovia_schema``. This module turns those rows into this lovia's tables:

- ``migrate`` (a store opened for writing, or ``lovia migrate PATH``) first writes a copy of
  the file next to it (``PATH.0.9.119.bak``, checked row for row against the original:
  ``_legacy_backup``), then
  converts every row and drops the old tables in one transaction: a process killed half way
  leaves the file as it was, and the next open migrates it again.
- ``convert(conn, ..., temp=True)`` (a store opened read-only) fills ``TEMP`` tables from the
  old rows, so the file is read as it is and never written.

Every row is decoded before anything is written: a row that does not decode refuses the
whole migration and names the session or run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import SchemaError
from ..transcript import TranscriptEntry, entry_from_dict
from ._codec import encode_head, encode_segment
from ._legacy_backup import (
    LEGACY_TABLES,
    VERSION,
    backup_path,
    fingerprint,
    recorded_backup,
    reuse_or_write_backup,
    tables_of,
    write_backup,
)
from ._sqlite_schema import CHECKPOINT_MIGRATIONS, SESSION_MIGRATIONS
from ._text import encode_entries
from .checkpoint import RunHead

__all__ = [
    "LEGACY_TABLES",
    "VERSION",
    "LegacyReport",
    "backup_path",
    "check",
    "convert",
    "is_legacy",
    "migrate",
    "tables_of",
]

# The schema version recorded for 0.9.119's stores in a migrated file: past any it knows.
MIGRATED_MARK = 1000


@dataclass(frozen=True)
class LegacyReport:
    """What a migration found (or, with ``--check``, would convert)."""

    sessions: int
    segments: int
    runs: int
    backup: str | None = None


def is_legacy(tables: Iterable[str]) -> bool:
    """True for a file 0.9.119 wrote that this lovia has not migrated yet."""
    names = set(tables)
    return "lovia_meta" not in names and bool(names & {"lovia_schema", *LEGACY_TABLES})


# -- reading the old rows ---------------------------------------------------------------------


def _entries(data: str, where: str) -> list[TranscriptEntry]:
    try:
        items = json.loads(data)
        if not isinstance(items, list):
            raise ValueError("not a JSON array")
        return [entry_from_dict(item) for item in items]
    except (ValueError, TypeError) as exc:
        raise SchemaError(
            f"{where} written by lovia {VERSION} does not decode: {exc}",
            hint="the file was left as it was; restore it from a backup, or delete that row "
            "with the sqlite3 shell and migrate again",
        ) from exc


_SegmentRow = tuple[str, str, list[TranscriptEntry], "str | None", float]
_RunRow = tuple[str, RunHead, list[list[TranscriptEntry]]]


def _session_rows(conn: sqlite3.Connection) -> list[_SegmentRow]:
    out: list[_SegmentRow] = []
    rows = conn.execute(
        "SELECT session_id, run_id, entries_json, meta_json, created_at FROM main.session_runs "
        "ORDER BY id"
    ).fetchall()
    for sid, rid, data, meta, created in rows:
        where = f"session {sid!r}, run {rid!r}"
        out.append((str(sid), str(rid), _entries(data, where), meta, float(created)))
    return out


def _owners(
    conn: sqlite3.Connection, segments: list[_SegmentRow], present: set[str]
) -> dict[str, str]:
    """The chat of each run: a finished run's segment says it; an unfinished one (a server
    stopped mid-run) is named by its chat's ``active_run_id`` in 0.9.119's web tables."""
    owner: dict[str, str] = {}
    if "chat_sessions" in present:
        columns = {row[1] for row in conn.execute("PRAGMA main.table_info(chat_sessions)")}
        if "active_run_id" in columns:
            rows = conn.execute(
                "SELECT id, active_run_id FROM main.chat_sessions WHERE active_run_id IS NOT NULL"
            )
            owner.update({str(rid): str(sid) for sid, rid in rows.fetchall()})
    owner.update({rid: sid for sid, rid, *_ in segments})
    return owner


def _run_rows(conn: sqlite3.Connection, segment_sessions: Mapping[str, str]) -> list[_RunRow]:
    out: list[_RunRow] = []
    heads = conn.execute("SELECT run_id, head_json FROM main.snapshot_heads ORDER BY rowid")
    for rid, head_json in heads.fetchall():
        where = f"the checkpoint of run {rid!r}"
        try:
            head = RunHead.from_dict(json.loads(head_json))
        except (ValueError, KeyError, TypeError) as exc:
            raise SchemaError(
                f"{where} written by lovia {VERSION} does not decode: {exc}",
                hint="the file was left as it was; restore it from a backup, or delete that "
                "run with the sqlite3 shell and migrate again",
            ) from exc
        if head.session_id is None and rid in segment_sessions:
            # 0.9.119 did not record the session in the head (``_owners`` finds it)
            head = RunHead.from_dict({**head.to_dict(), "session_id": segment_sessions[rid]})
        batches = conn.execute(
            "SELECT entries_json FROM main.snapshot_turns WHERE run_id = ? ORDER BY seq", (rid,)
        ).fetchall()
        out.append((str(rid), head, [_entries(b[0], where) for b in batches]))
    return out


# -- writing ours ------------------------------------------------------------------------------


def _create(conn: sqlite3.Connection, component: str, *, temp: bool) -> None:
    migrations = SESSION_MIGRATIONS if component == "session" else CHECKPOINT_MIGRATIONS
    for version in sorted(migrations):
        for statement in migrations[version]:
            text = statement.strip()
            if temp:
                text = text.replace("CREATE TABLE ", "CREATE TEMP TABLE ", 1)
            conn.execute(text)
    conn.execute(
        "INSERT INTO lovia_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (f"schema:{component}", str(max(migrations))),
    )


def convert(conn: sqlite3.Connection, components: Sequence[str], *, temp: bool) -> LegacyReport:
    """Fill this lovia's tables for ``components`` from the 0.9.119 rows of ``main``.

    ``temp=True`` creates them as ``TEMP`` tables (the file is not written); otherwise the
    caller holds a write transaction and drops the old tables afterwards.
    """
    present = tables_of(conn)
    conn.execute(
        f"CREATE {'TEMP TABLE IF NOT EXISTS lovia_meta' if temp else 'TABLE main.lovia_meta'} "
        "(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
    )
    segments = _session_rows(conn) if "session_runs" in present else []
    owner = _owners(conn, segments, set(present))
    sessions: dict[str, int] = {}
    runs = 0
    if "session" in components:
        _create(conn, "session", temp=temp)
        for sid, rid, entries, meta_text, created in segments:
            meta_value = json.loads(meta_text) if meta_text is not None else None
            columns = encode_segment(entries, meta_value if isinstance(meta_value, dict) else None)
            conn.execute(
                "INSERT INTO lovia_session_segments (session_id, run_id, entries, meta, "
                "n_entries, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, rid, *columns, created, created),
            )
            sessions[sid] = sessions.get(sid, 0) + 1
        conn.executemany(
            "INSERT INTO lovia_session_heads (session_id, revision, rewrites) VALUES (?, ?, 0)",
            list(sessions.items()),
        )
    if "checkpoint" in components and present & {"snapshot_heads"}:
        _create(conn, "checkpoint", temp=temp)
        for rid, head, batches in _run_rows(conn, owner):
            kept = [b for b in batches if b]
            created = head.started_at if head.started_at is not None else head.updated_at
            cur = conn.execute(
                "INSERT INTO checkpoint_runs (run_id, head, status, session_id, entry_count, "
                "next_seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    encode_head(rid, head),
                    head.status,
                    head.session_id,
                    sum(len(b) for b in kept),
                    len(kept),
                    created,
                    head.updated_at,
                ),
            )
            conn.executemany(
                "INSERT INTO checkpoint_batches (run_key, seq, entries) VALUES (?, ?, ?)",
                [(cur.lastrowid, seq, encode_entries(b)) for seq, b in enumerate(kept)],
            )
            runs += 1
    elif "checkpoint" in components:
        _create(conn, "checkpoint", temp=temp)
    return LegacyReport(len(sessions), len(segments), runs)


def migrate(conn: sqlite3.Connection, path: str, *, begin: bool = True) -> LegacyReport | None:
    """Migrate the 0.9.119 file behind ``conn`` (autocommit) in place; ``None`` when it is
    not one (any more: another process may have migrated it meanwhile)."""
    conn.execute("BEGIN")  # one read snapshot: another process cannot drop the tables mid-read
    try:
        checked = check(conn)  # every row decodes before anything is written
    finally:
        conn.execute("ROLLBACK")
    if checked is None:
        return None
    target, digest, owned = reuse_or_write_backup(conn, path)
    for _attempt in range(3):
        _begin(conn)
        try:
            if not is_legacy(tables_of(conn)):
                kept = recorded_backup(conn)
                conn.execute("ROLLBACK")
                # another process migrated it: our copy goes unless that migration kept it
                if owned and kept != os.path.basename(target):
                    os.remove(target)
                return None
            if fingerprint(conn) != digest:  # written since the copy: copy again
                conn.execute("ROLLBACK")
                if owned:
                    os.remove(target)
                target, digest = write_backup(conn, path)
                owned = True
                continue
            report = convert(conn, ("session", "checkpoint"), temp=False)
            _drop_legacy(conn)
            conn.execute(
                "INSERT INTO main.lovia_meta (key, value) VALUES (?, ?)",
                (
                    f"migrated:{VERSION}",
                    json.dumps({"at": time.time(), "backup": os.path.basename(target)}),
                ),
            )
            _before_commit()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return LegacyReport(report.sessions, report.segments, report.runs, target)
    raise SchemaError(
        f"{path!r} kept changing while lovia tried to migrate it",
        hint="stop the programs that still use it with lovia 0.9.119, then migrate again",
    )


def _begin(conn: sqlite3.Connection, wait_s: float = 120.0) -> None:
    """``BEGIN IMMEDIATE``, waiting while another process migrates a big file."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _drop_legacy(conn: sqlite3.Connection) -> None:
    present = tables_of(conn)
    for table in LEGACY_TABLES:
        if table in present:
            conn.execute(f"DROP TABLE main.{table}")
    # 0.9.119 refuses a store whose recorded version is past the ones it knows ("a newer lovia
    # wrote this database"): without these rows, a 0.9.119 process opening the file after the
    # migration would make empty tables of its own and carry on writing into them.
    conn.execute(
        "CREATE TABLE IF NOT EXISTS main.lovia_schema"
        " (store TEXT PRIMARY KEY, version INTEGER NOT NULL)"
    )
    conn.executemany(
        "INSERT OR REPLACE INTO main.lovia_schema (store, version) VALUES (?, ?)",
        [("session", MIGRATED_MARK), ("checkpoint", MIGRATED_MARK)],
    )


def _before_commit() -> None:
    """The last moment before the migration commits (a test kills the process here)."""


def check(conn: sqlite3.Connection) -> LegacyReport | None:
    """What ``migrate`` would convert (every row decoded, nothing written), or ``None``."""
    present = tables_of(conn)
    if not is_legacy(present):
        return None
    segments = _session_rows(conn) if "session_runs" in present else []
    owner = _owners(conn, segments, set(present))
    runs = _run_rows(conn, owner) if "snapshot_heads" in present else []
    return LegacyReport(len({s[0] for s in segments}), len(segments), len(runs))
