"""The queue tests' Redis fixture, shared with the PostgreSQL queue tests."""

from tests.postgres.conftest import redis

__all__ = ["redis"]
