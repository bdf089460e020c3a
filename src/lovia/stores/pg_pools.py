"""A PostgreSQL connection pool that checks a connection it lends only after it idled.

psycopg_pool can check each connection before lending it (one round trip: procrastinate's
queue pool does so by default). ``recently_checked_pool`` checks only a connection that sat
idle over ``recheck_after`` seconds: a busy process saves a round trip per use, while a
connection killed as it idled (a restart, ``pg_terminate_backend``) is still replaced before
use. One killed while in use fails its statement either way, and the pool drops it.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from psycopg_pool import AsyncConnectionPool

__all__ = ["recently_checked_pool"]


def recently_checked_pool(*, recheck_after: float = 1.0, **kwargs: Any) -> AsyncConnectionPool:
    """``AsyncConnectionPool(**kwargs)`` whose ``check`` runs only on connections returned
    more than ``recheck_after`` seconds ago (its ``check`` and ``reset`` are this one's)."""
    returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    async def check(conn: Any) -> None:
        if time.monotonic() - returned.get(conn, float("-inf")) > recheck_after:
            await AsyncConnectionPool.check_connection(conn)

    async def reset(conn: Any) -> None:
        returned[conn] = time.monotonic()

    kwargs["check"] = check
    kwargs["reset"] = reset
    return AsyncConnectionPool(**kwargs)
