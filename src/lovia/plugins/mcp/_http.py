"""A size cap on JSON answers over streamable HTTP, applied while the body streams in.

Imported only when an HTTP connection opens (it needs the SDK's HTTP client, ``httpx2``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

__all__ = ["CappedBody", "TooLarge"]


class TooLarge(httpx2.StreamError):
    """An answer longer than ``max_result_bytes``: the SDK reports it as an answer it could
    not read, to the request that waits for it."""


class CappedBody(httpx2.AsyncByteStream):
    """A response body that ends in ``TooLarge`` past ``cap`` bytes, so nothing longer is
    ever held in memory."""

    def __init__(self, inner: httpx2.AsyncByteStream, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._cap:
                raise TooLarge(f"the answer is longer than max_result_bytes ({self._cap:,} bytes)")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
