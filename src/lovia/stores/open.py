"""``open_stores(db)``: the session store and checkpointer behind one ``--db`` value.

A ``postgresql://`` (or ``postgres://``) URL opens ``PostgresSession`` and
``PostgresCheckpointer`` on one shared pool, for several processes or hosts; anything else
is a SQLite file path, opened by ``SQLiteSession`` and ``SQLiteCheckpointer`` with
``wal=True`` so several processes on one host can share it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UserError

__all__ = ["is_postgres_url", "open_stores"]

_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(db: str) -> bool:
    """True when ``db`` names a PostgreSQL database rather than a SQLite file."""
    return db.strip().lower().startswith(_SCHEMES)


def open_stores(
    db: str,
    *,
    create: bool = True,
    table_prefix: str = "lovia_",
    max_size: int = 8,
    read_only: bool = False,
) -> tuple[Any, Any]:
    """``(session, checkpointer)`` on ``db``: a SQLite path or a ``postgresql://`` URL.

    Close both when done (``await session.close(); await checkpointer.close()``). With
    ``create=False`` a SQLite file that does not exist is a ``UserError`` instead of a new
    empty database; PostgreSQL tables are created on first use. ``read_only=True`` opens
    stores that never create, convert, migrate or switch anything (a SQLite file is opened
    read-only, and not switched to WAL) and refuse every write.
    """
    if not isinstance(db, str) or not db.strip():
        raise UserError(
            f"--db must be a SQLite path or a postgresql:// URL, got {db!r}",
            hint="pass e.g. 'lovia.db' or 'postgresql://user@host:5432/app'",
        )
    if is_postgres_url(db):
        try:
            db.encode("utf-8")
        except UnicodeEncodeError:
            raise UserError(
                f"the database URL {db!r} is not valid text (a byte that is not UTF-8)",
                hint="write the URL in UTF-8, percent-encoding other bytes (%FF)",
            ) from None
        return _open_postgres(db.strip(), table_prefix, max_size, read_only)
    from .sqlite import SQLiteCheckpointer, SQLiteSession

    path = Path(db)
    if not path.exists():
        if not create or read_only:
            raise UserError(
                f"no database at {db!r}",
                hint="pass --db PATH, or start 'lovia web' / 'lovia chat' once to create it",
            )
        path.parent.mkdir(parents=True, exist_ok=True)
    if read_only:
        return SQLiteSession(path, read_only=True), SQLiteCheckpointer(path, read_only=True)
    return SQLiteSession(path, wal=True), SQLiteCheckpointer(path, wal=True)


def _open_postgres(url: str, table_prefix: str, max_size: int, read_only: bool) -> tuple[Any, Any]:
    try:
        from psycopg_pool import AsyncConnectionPool

        from .postgres import PostgresCheckpointer, PostgresSession
    except ImportError as exc:
        raise UserError(
            f"a postgresql:// database needs psycopg: {exc}",
            hint="pip install 'lovia[postgres]'",
        ) from exc
    if url.lower().startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    # one pool for both stores; each closes it (closing a closed pool is a no-op)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url, min_size=0, max_size=max_size, kwargs={"autocommit": True}, open=False
    )
    options: dict[str, Any] = {"table_prefix": table_prefix, "close_pool": True}
    if read_only:
        options["read_only"] = True
    session = PostgresSession(pool, **options)
    checkpointer = PostgresCheckpointer(pool, **options)
    return session, checkpointer
