"""The ``data:`` objects of a streamed Chat Completions answer, read from the SDK's raw
response rather than through its chunk models."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from ..errors import ProviderError

__all__ = ["raw_chunks"]

_log = logging.getLogger("lovia.providers")


async def raw_chunks(
    client: Any,
    kwargs: dict[str, Any],
    where: str,
    to_error: Callable[[Exception], ProviderError],
) -> AsyncGenerator[Any, None]:
    """The decoded ``data:`` objects of a streamed Chat Completions answer, read through the
    SDK's request (its retries, timeouts and error answers) but not its chunk models; an
    error object in the stream is the SDK's mid-stream ``APIError``, as there."""
    import openai

    try:
        opened = client.chat.completions.with_streaming_response.create(**kwargs)
        response = await opened.__aenter__()
    except openai.APIError as exc:
        raise to_error(exc) from exc
    try:
        data: list[str] = []
        async for line in _closed(response.iter_lines()):
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
                continue
            if line or not data:
                continue  # an event name, an id, a comment: nothing a chunk needs
            text, data = "\n".join(data), []
            if text.startswith("[DONE]"):
                yield None  # the end the server marks (compatible servers may omit finish_reason)
                break
            try:
                chunk = json.loads(text)
            except ValueError:
                # a keep-alive ("data: ping"), an empty data line or a garbled one: no chunk
                # of the answer, skipped as 0.9.119 did; a cut answer still fails below
                _log.debug("%s: skipped a stream line that is not JSON: %.80r", where, text)
                continue
            error = chunk.get("error") if isinstance(chunk, dict) else None
            if error:
                message = error.get("message") if isinstance(error, dict) else None
                failure = openai.APIError(
                    message
                    if isinstance(message, str) and message
                    else "An error occurred during streaming",
                    response.http_response.request,
                    body=error,
                )
                raise to_error(failure) from failure
            yield chunk
    finally:
        await opened.__aexit__(None, None, None)


async def _closed(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """``lines``, then the blank line that ends the last event if the body left it out."""
    async for line in lines:
        yield line
    yield ""
