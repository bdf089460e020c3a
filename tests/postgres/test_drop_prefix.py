"""The PostgreSQL tests' clean-up never waits for ever on a connection of the test's own.

A test whose stores still have a task inside a transaction when it ends (caught between two
statements of a schema creation) left that connection holding locks on the test's tables; the
clean-up's ``DROP`` waited on them while it blocked the very thread that task needed to go on,
and the whole test run hung (seen once in CI).
"""

from __future__ import annotations

import threading

import psycopg

from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn


def test_the_clean_up_drops_tables_a_connection_left_inside_a_transaction_holds() -> None:
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute(f'CREATE TABLE "{prefix}kept" (id int)')
    holder = psycopg.connect(dsn)  # left idle inside its transaction, as the stuck task was
    holder.execute(f'INSERT INTO "{prefix}kept" VALUES (1)')
    holder.execute(f'CREATE TABLE "{prefix}half_made" (id int)')

    finished = threading.Event()
    errors: list[BaseException] = []

    def clean_up() -> None:
        try:
            drop_prefix(dsn, prefix)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            finished.set()

    worker = threading.Thread(target=clean_up, daemon=True)
    worker.start()
    try:
        assert finished.wait(60), "the clean-up is still waiting on the open transaction"
        assert not errors, errors
        with psycopg.connect(dsn) as check:
            left = check.execute(
                "SELECT tablename FROM pg_tables WHERE starts_with(tablename, %s)", (prefix,)
            ).fetchall()
        assert left == []
        assert holder.closed or holder.broken or _holder_lost(holder)
    finally:
        if not finished.is_set():
            holder.close()  # lets the old clean-up go on, so the run does not hang here
            worker.join(30)
        holder.close()


def _holder_lost(holder: psycopg.Connection) -> bool:
    try:
        holder.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    return False
