"""PostgreSQL stores: ``PostgresSession`` and ``PostgresCheckpointer`` (extra ``postgres``).

They may share one database, one pool and one table prefix. Importing this module needs
``psycopg`` 3 and ``psycopg_pool``: ``pip install 'lovia[postgres]'``.
"""

from ._postgres import PgDeadlines
from .postgres_checkpoint import PostgresCheckpointer
from .postgres_session import PostgresSession

__all__ = ["PgDeadlines", "PostgresCheckpointer", "PostgresSession"]
