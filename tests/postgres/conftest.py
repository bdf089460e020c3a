"""Fixtures for the PostgreSQL and queue tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest


@pytest.fixture
async def redis() -> AsyncIterator[tuple[Any, str]]:
    """An arq Redis pool and a tag for queue names and job ids no other test uses; every
    key holding the tag is deleted after the test."""
    pytest.importorskip("arq")
    from arq.connections import RedisSettings, create_pool

    try:
        pool = await create_pool(RedisSettings(host="127.0.0.1", port=6379, conn_retries=0))
    except Exception as exc:  # pragma: no cover - depends on the machine
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the queue tests, but Redis is unreachable: {exc}")
        pytest.skip(f"Redis at 127.0.0.1:6379 is unreachable: {exc}")
    tag = uuid.uuid4().hex[:10]
    try:
        yield pool, tag
    finally:
        keys = [k async for k in pool.scan_iter(match=f"*{tag}*", count=1000)]
        if keys:
            await pool.delete(*keys)
        await pool.aclose()
