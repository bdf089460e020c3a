"""Fixtures for the web tests: the real ASGI app behind an httpx client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from lovia.web.sse import decode_sse


def make_client(app: Any, **kwargs: Any) -> httpx.AsyncClient:
    kwargs.setdefault("base_url", "http://127.0.0.1")
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), **kwargs)


@pytest.fixture
async def client_for() -> AsyncIterator[Any]:
    made: list[httpx.AsyncClient] = []

    def build(app: Any, **kwargs: Any) -> httpx.AsyncClient:
        c = make_client(app, **kwargs)
        made.append(c)
        return c

    yield build
    for c in made:
        await c.aclose()


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    """The lovia events of an SSE response, in order."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [event for _, event in decode_sse(response.text)]
