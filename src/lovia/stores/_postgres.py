"""The PostgreSQL plumbing both PostgreSQL stores share: a pool, a versioned schema per
component, and one execute seam.

Every statement goes through ``PostgresDatabase.read`` / ``write`` (the one execute seam), so
tracing, counting and error translation live here. Table names are composed from a
validated prefix (plain identifier characters only, double-quoted); values are always bound
parameters.
Connections are in autocommit mode: a read is one statement, a write is one explicit
transaction.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from ..errors import SchemaError, StoreError, UserError
from ._lifetime import ClosingStore
from ._schema import MetaSql, Migrations, migrate, version_of

__all__ = ["Conn", "Migrations", "PgDeadlines", "PostgresDatabase", "PostgresStore", "check_prefix"]

T = TypeVar("T")
S = TypeVar("S", bound="PostgresStore")
Conn = psycopg.AsyncConnection[Any]
"""Schema version -> statements bringing ``v - 1`` to ``v``; ``{name}`` is a prefixed table."""

_PREFIX = re.compile(r"[a-z_][a-z0-9_]{0,39}\Z")
CONNECT_TIMEOUT_S = 10.0
_timeout: Any = getattr(asyncio, "timeout", None)  # Python 3.11 on


@dataclass(frozen=True, slots=True)
class PgDeadlines:
    """How long a PostgreSQL store waits, in seconds (``None``: no limit), set on each
    connection the store opens from a DSN (a pool you pass keeps its own settings).

    ``statement_timeout``: the server cancels a statement running longer (and rolls back its
    transaction: a save that timed out did not commit). ``lock_timeout``: the same for a
    wait on a lock another session holds (``LOCK TABLE``, a long transaction).
    ``connect_timeout``: to open a connection. ``tcp_user_timeout`` and the keepalives:
    a link that stops forwarding (no reset) is given up after about that long, when the
    kernel sees it. ``call_timeout``: the store's own deadline on one call (getting a
    connection, the statements, the commit); it also ends a stall nothing else sees (a proxy
    or load balancer in between that keeps acknowledging), keep it above
    ``statement_timeout``. A call past it drops its connection and fails with ``StoreError``;
    a write cut off that way may or may not have committed, and the next load shows which."""

    statement_timeout: float | None = 30.0
    lock_timeout: float | None = 10.0
    connect_timeout: float = CONNECT_TIMEOUT_S
    tcp_user_timeout: float | None = 30.0
    keepalives_idle: int = 10
    keepalives_interval: int = 5
    keepalives_count: int = 3
    call_timeout: float | None = 45.0

    def connect_kwargs(self, dsn: str | None = None) -> dict[str, Any]:
        """libpq connection parameters for these deadlines. What ``dsn`` sets itself wins: its
        own parameters are left out, and its ``options`` (a ``search_path``, say) are kept,
        after these deadlines' (the later ``-c`` of a setting wins)."""
        out: dict[str, Any] = {
            "connect_timeout": max(1, int(self.connect_timeout)),
            "keepalives": 1,
            "keepalives_idle": self.keepalives_idle,
            "keepalives_interval": self.keepalives_interval,
            "keepalives_count": self.keepalives_count,
        }
        if self.tcp_user_timeout is not None:
            out["tcp_user_timeout"] = int(self.tcp_user_timeout * 1000)
        options = []
        if self.statement_timeout is not None:
            options.append(f"-c statement_timeout={int(self.statement_timeout * 1000)}")
        if self.lock_timeout is not None:
            options.append(f"-c lock_timeout={int(self.lock_timeout * 1000)}")
        given = _dsn_params(dsn)
        if given.get("options"):
            options.append(str(given["options"]))
        if options:
            out["options"] = " ".join(options)
        return {k: v for k, v in out.items() if k == "options" or k not in given}


def _dsn_params(dsn: str | None) -> dict[str, Any]:
    """The parameters a connection string sets (URL or ``key=value`` form); none if unreadable
    (the connect that follows says what is wrong with it)."""
    if not dsn:
        return {}
    try:
        return dict(conninfo_to_dict(dsn))
    except psycopg.ProgrammingError:
        return {}


def check_prefix(prefix: Any) -> str:
    """A table prefix: lower-case letters, digits and ``_``, at most 40 characters."""
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise UserError(
            f"table_prefix {prefix!r} is not a plain SQL identifier prefix",
            hint="use lower-case letters, digits and '_' (starting with a letter or '_'), "
            "at most 40 characters, e.g. 'lovia_' or 'tenant7_'",
        )
    return prefix


class PostgresDatabase:
    """One store's view of a PostgreSQL database: its tables under ``prefix``."""

    def __init__(
        self,
        dsn_or_pool: str | AsyncConnectionPool[Any],
        *,
        prefix: str,
        component: str,
        migrations: Migrations,
        tables: Sequence[str],
        min_size: int = 0,
        max_size: int = 4,
        close_pool: bool | None = None,
        read_only: bool = False,
        deadlines: PgDeadlines | None = None,
    ) -> None:
        self.prefix = check_prefix(prefix)
        self.deadlines = deadlines or PgDeadlines()
        self.read_only = bool(read_only)
        self.component = component
        self.migrations = migrations
        self.version = max(migrations)
        # the prefix is plain identifier characters (checked): double quotes make names exact
        self._quoted = {t: f'"{prefix}{t}"' for t in ("meta", "run_leases", *tables)}
        self._queries: dict[str, bytes] = {}
        # min_size 0: the pool never connects in the background on its own, so a store a
        # program forgets to close cannot keep asyncio.run() from returning (its shutdown
        # waits on every task, and a pool filling itself may be in a connect just then)
        self._sizes, self._owns_pool = (min_size, max_size), isinstance(dsn_or_pool, str)
        if isinstance(dsn_or_pool, AsyncConnectionPool):
            self._pool = dsn_or_pool
            info = dsn_or_pool.conninfo  # may be a callable in psycopg_pool >= 3.3
            self._dsn: str | None = info if isinstance(info, str) else None
            self._close_pool = bool(close_pool)
        elif isinstance(dsn_or_pool, str) and dsn_or_pool:
            self._dsn, self._pool = dsn_or_pool, self._new_pool(dsn_or_pool)
            self._close_pool = True if close_pool is None else close_pool
        else:
            raise UserError(
                f"a PostgreSQL store needs a DSN string or an AsyncConnectionPool, got "
                f"{type(dsn_or_pool).__name__}",
                hint="pass 'postgresql://user@host:5432/db' or psycopg_pool.AsyncConnectionPool",
            )
        self._ready = False
        self._ready_lock: asyncio.Lock | None = None
        self._closed = False
        # a lost link (stall, drop, refusal) leaves the pool backing off its reconnects (1, 2,
        # 4, 8 s...): the next call on a pool this store owns swaps in a fresh one
        self._link_lost = False
        self._retired: set[asyncio.Task[None]] = set()

    def _new_pool(self, dsn: str) -> AsyncConnectionPool[Any]:
        kwargs = {**self.deadlines.connect_kwargs(dsn), "autocommit": True}
        low, high = self._sizes
        return AsyncConnectionPool(dsn, min_size=low, max_size=high, kwargs=kwargs, open=False)

    async def _renew_pool_after_link_loss(self) -> None:
        if not self._link_lost or not self._owns_pool or self._dsn is None or self._closed:
            return
        self._link_lost = False
        old, self._pool = self._pool, self._new_pool(self._dsn)
        await self._pool.open(wait=False)
        task = asyncio.ensure_future(old.close(timeout=1.0))
        self._retired.add(task)
        task.add_done_callback(self._retired.discard)

    @property
    def pool(self) -> AsyncConnectionPool[Any]:
        return self._pool

    def q(self, text: str) -> bytes:
        """``text`` with ``{table}`` placeholders replaced by this store's prefixed tables
        (``{run_leases}`` too), rendered once per store rather than composed per call."""
        query = self._queries.get(text)
        if query is None:
            query = self._queries[text] = text.format_map(self._quoted).encode()
        return query

    # -- the execute seam -------------------------------------------------------------------

    async def read(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn(conn)`` on a pooled connection in autocommit mode."""
        return await self._use(fn, transaction=False)

    async def write(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn(conn)`` in one transaction: committed whole or rolled back whole."""
        self.check_writable()
        return await self._use(fn, transaction=True)

    def check_writable(self) -> None:
        """``UserError`` when the store was opened read-only."""
        if self.read_only:
            raise UserError(
                f"the {self.component} store under prefix {self.prefix!r} was opened read-only",
                hint="open it without read_only=True to change it",
            )

    async def read_snapshot(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn(conn)``'s reads in one read-only snapshot (several statements, one view)."""

        async def snapshot(conn: Conn) -> T:
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return await fn(conn)

        return await self._use(snapshot, transaction=True)

    async def _use(self, fn: Callable[[Conn], Awaitable[T]], *, transaction: bool) -> T:
        if self._closed:
            raise UserError("this PostgreSQL store is closed", hint="open a new store")
        limit = self.deadlines.call_timeout
        if limit is None:
            return await self._call(fn, transaction=transaction)
        try:
            if _timeout is None:  # Python 3.10: wait_for (it runs the call as a task)
                return await asyncio.wait_for(self._call(fn, transaction=transaction), limit)
            async with _timeout(limit):
                return await self._call(fn, transaction=transaction)
        except asyncio.TimeoutError as exc:
            self._link_lost = True
            what = "write" if transaction else "call"
            raise StoreError(
                f"PostgreSQL did not answer within call_timeout ({limit} s): the server or "
                f"the link to it stalled; the connection was dropped, and this {what} may or "
                f"may not have committed (the next load of the run shows which)",
                hint="check the server and the network path to it (pg_stat_activity, the "
                "proxy or load balancer); if statements legitimately run that long, raise "
                "call_timeout and statement_timeout with deadlines=PgDeadlines(...)",
            ) from exc

    async def _call(self, fn: Callable[[Conn], Awaitable[T]], *, transaction: bool) -> T:
        await self._ensure_ready()
        await self._renew_pool_after_link_loss()
        pool = self._pool
        try:
            async with pool.connection(timeout=CONNECT_TIMEOUT_S) as conn:
                if not transaction:
                    return await fn(conn)
                async with conn.transaction():
                    return await fn(conn)
        except PoolClosed:
            if pool is self._pool or self._closed:
                raise StoreError(
                    "this PostgreSQL store's connection pool was closed",
                    hint="open a new store, or keep the pool you passed open while it is used",
                ) from None
            # the pool was renewed while this call waited for a connection: no statement
            # ran, so it goes again on the new pool
            return await self._call(fn, transaction=transaction)
        except PoolTimeout as exc:
            self._link_lost = True
            raise _unreachable(exc) from exc
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreError(
                f"PostgreSQL: waited longer than lock_timeout ({self.deadlines.lock_timeout} s) "
                f"for a lock another session holds; the statement was rolled back, nothing "
                f"was written: {exc}",
                hint="find the session holding the lock (pg_locks), or raise lock_timeout "
                "with deadlines=PgDeadlines(lock_timeout=...)",
            ) from exc
        except psycopg.errors.QueryCanceled as exc:
            raise StoreError(
                f"PostgreSQL: the statement ran longer than statement_timeout "
                f"({self.deadlines.statement_timeout} s) and was cancelled; it was rolled "
                f"back, nothing was written: {exc}",
                hint="raise statement_timeout with deadlines=PgDeadlines(statement_timeout=...)",
            ) from exc
        except psycopg.OperationalError as exc:
            self._link_lost = True
            raise StoreError(
                f"PostgreSQL: the connection was lost during a store call ({exc}); a write "
                f"whose COMMIT was already sent may or may not have committed (the next load "
                f"of the run shows which)",
                hint="check the server and the network path to it; keepalives and "
                "tcp_user_timeout in deadlines=PgDeadlines(...) set how fast a dead link is "
                "noticed",
            ) from exc
        except psycopg.Error as exc:
            raise StoreError(
                f"PostgreSQL error: {exc}",
                hint="check the server log; the statement was rolled back",
            ) from exc

    async def close(self) -> None:
        self._closed = True
        if self._close_pool:
            await self._pool.close()
        if self._retired:
            await asyncio.gather(*self._retired, return_exceptions=True)

    # -- the schema -------------------------------------------------------------------------

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if self._ready:
                return
            try:
                if self._dsn is not None:
                    # a direct first connection fails at once with the server's own reason,
                    # where a pool would retry until its timeout
                    async with await psycopg.AsyncConnection.connect(
                        self._dsn, **self._connect_kwargs()
                    ) as conn:
                        async with conn.transaction():
                            await self._migrate(conn)
                    await self._pool.open(wait=False)
                else:
                    await self._pool.open(wait=False)
                    async with self._pool.connection(timeout=CONNECT_TIMEOUT_S) as conn:
                        async with conn.transaction():
                            await self._migrate(conn)
            except PoolTimeout as exc:
                raise _unreachable(exc) from exc
            except psycopg.OperationalError as exc:
                raise _unreachable(exc) from exc
            except psycopg.Error as exc:
                raise StoreError(
                    f"could not prepare the {self.component} tables: {exc}",
                    hint="check that the database user may create tables; nothing was changed",
                ) from exc
            self._ready = True

    def _connect_kwargs(self) -> dict[str, Any]:
        """The pool's plain connection settings (password, sslmode...), for the first connect."""
        given = self._pool.kwargs if isinstance(self._pool.kwargs, dict) else {}
        plain = {k: v for k, v in given.items() if isinstance(v, (str, int)) and k != "autocommit"}
        return {**self.deadlines.connect_kwargs(self._dsn), **plain, "autocommit": True}

    async def _check_schema(self, conn: Conn) -> None:
        """Read-only: the tables must exist at a version this lovia reads; nothing is made."""
        cur = await conn.execute("SELECT to_regclass(%s)", (self.prefix + "meta",))
        row = await cur.fetchone()
        key = f"schema:{self.component}"
        current = 0
        if row is not None and row[0] is not None:
            cur = await conn.execute(self.q("SELECT value FROM {meta} WHERE key = %s"), (key,))
            current = version_of(await cur.fetchone())
        if current == 0:
            raise SchemaError(
                f"no lovia {self.component} tables under prefix {self.prefix!r} in this database",
                hint="check the URL and --table-prefix; reading never creates tables",
            )
        if current > self.version:
            raise self._too_new(current)

    async def _migrate(self, conn: Conn) -> None:
        if self.read_only:
            await self._check_schema(conn)
            return
        # one migrator at a time per prefix: two processes starting together must not both
        # create the tables
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"lovia:{self.prefix}",)
        )
        await conn.execute(
            self.q("CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value text NOT NULL)")
        )

        run = migrate(self.component, self.version, self.migrations, _META, self._too_new)
        for step in run:
            cur = await conn.execute(self.q(step.sql), step.params)
            run.reply = await cur.fetchone() if step.fetch else None

    def _too_new(self, found: int) -> SchemaError:
        return SchemaError(
            f"the {self.component} tables under prefix {self.prefix!r} have schema version "
            f"{found}; this lovia reads up to version {self.version}",
            hint="upgrade lovia to use these tables; they were left unchanged",
        )


class PostgresStore(ClosingStore):
    """What every PostgreSQL store has: its constructor, ``table_prefix``, ``close`` and
    ``async with``; a store names its schema component, migrations and tables."""

    _db: PostgresDatabase
    _component: ClassVar[str]
    _migrations: ClassVar[Migrations]
    _tables: ClassVar[tuple[str, ...]]

    def __init__(
        self,
        dsn_or_pool: str | AsyncConnectionPool[Any],
        *,
        table_prefix: str = "lovia_",
        min_size: int = 0,
        max_size: int = 4,
        close_pool: bool | None = None,
        read_only: bool = False,
        deadlines: PgDeadlines | None = None,
    ) -> None:
        self._db = PostgresDatabase(
            dsn_or_pool,
            prefix=table_prefix,
            component=self._component,
            migrations=self._migrations,
            tables=self._tables,
            min_size=min_size,
            max_size=max_size,
            close_pool=close_pool,
            read_only=read_only,
            deadlines=deadlines,
        )

    @property
    def table_prefix(self) -> str:
        return self._db.prefix

    def __repr__(self) -> str:
        return f"{type(self).__name__}(table_prefix={self._db.prefix!r})"


_META = MetaSql(
    read="SELECT value FROM {meta} WHERE key = %s",
    write="INSERT INTO {meta} (key, value) VALUES (%s, %s) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
)


def _unreachable(exc: Exception) -> StoreError:
    return StoreError(
        f"could not connect to PostgreSQL: {exc}",
        hint="check the DSN (postgresql://user@host:5432/db) and that the server is running",
    )
