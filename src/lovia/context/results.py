"""Archives for tool outputs: ``ResultStore`` and two built-in stores.

A store keeps full tool outputs under a content digest, so an output that the context
policy offloads from the view, or that ``session.trim_tool_results`` later cuts, can still
be returned by the ``recall_tool_result`` tool.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import StoreError, UserError

__all__ = [
    "FileResultStore",
    "InMemoryResultStore",
    "ResultStore",
    "call_key",
    "content_digest",
    "get_result",
    "put_result",
    "remember_call",
    "stored_digests",
]

_KEY = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")
_DIGEST_CHARS = 24  # 96 bits of sha256: collisions are not a practical concern
_DIGEST = re.compile(r"^[0-9a-f]{24}\Z")


@runtime_checkable
class ResultStore(Protocol):
    """Keeps text under a key: ``put(key, content)`` and ``get(key) -> str | None``.

    The methods may be coroutines (as the built-in stores' are, and lovia 0.9.119's
    protocol has them) or plain functions, which are then called off the event loop.
    ``put`` of a key that already holds the same text is a no-op; ``get`` of an unknown key
    returns ``None``. Keys match ``[A-Za-z0-9_-]{1,128}``.
    """

    def put(self, key: str, content: str) -> Awaitable[None] | None: ...

    def get(self, key: str) -> Awaitable[str | None] | str | None: ...


async def _call(method: Any, *args: str) -> Any:
    if inspect.iscoroutinefunction(method):
        return await method(*args)
    got = await asyncio.to_thread(method, *args)
    return await got if inspect.isawaitable(got) else got


async def put_result(store: ResultStore, key: str, content: str) -> None:
    """``store.put(key, content)``, awaited when the store is asynchronous."""
    await _call(store.put, key, content)


async def get_result(store: ResultStore, key: str) -> str | None:
    """``store.get(key)``, awaited when the store is asynchronous."""
    got = await _call(store.get, key)
    return None if got is None else str(got)


def content_digest(content: str) -> str:
    """The key a tool output is archived under (a short sha256 hex digest)."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]


def call_key(call_id: str) -> str:
    """The key under which the digests of ``call_id``'s outputs are listed."""
    return "call-" + content_digest(call_id)


def check_key(key: str) -> str:
    """``key`` if it is safe as a store key, else ``UserError``."""
    if not isinstance(key, str) or not _KEY.match(key):
        raise UserError(
            f"invalid result store key {key!r}",
            hint="keys are 1-128 characters of letters, digits, '_' or '-' (use content_digest)",
        )
    return key


async def remember_call(store: ResultStore, call_id: str, digest: str, *, keep: int = 16) -> None:
    """Add ``digest`` to the list of outputs archived for ``call_id`` (ids may repeat)."""
    known = await stored_digests(store, call_id)
    if digest in known:
        return
    await put_result(store, call_key(call_id), json.dumps([*known, digest][-keep:]))


async def stored_digests(store: ResultStore, call_id: str) -> list[str]:
    """The digests archived for ``call_id``, oldest first (``[]`` when none)."""
    raw = await get_result(store, call_key(call_id))
    if not raw:
        return []
    try:
        items = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    return [d for d in items if isinstance(d, str) and _DIGEST.match(d)]


class InMemoryResultStore:
    """Keeps the last ``max_entries`` results in memory (least recently used go first)."""

    def __init__(self, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise UserError(
                f"max_entries must be at least 1, got {max_entries}",
                hint="use InMemoryResultStore(max_entries=1024) or a larger number",
            )
        self.max_entries = max_entries
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()  # called from worker threads

    async def put(self, key: str, content: str) -> None:
        check_key(key)
        with self._lock:
            self._items[key] = content
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    async def get(self, key: str) -> str | None:
        check_key(key)
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def __len__(self) -> int:
        return len(self._items)


class FileResultStore:
    """One file per result in ``dir`` (created if missing), each written atomically."""

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = Path(dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the result store directory {str(self.dir)!r}: {exc}",
                hint="pass a directory you can write to",
            ) from exc

    def _path(self, key: str) -> Path:
        return self.dir / (check_key(key) + ".txt")

    async def put(self, key: str, content: str) -> None:
        await asyncio.to_thread(self._put, key, content)

    async def get(self, key: str) -> str | None:
        return await asyncio.to_thread(self._get, key)

    def _put(self, key: str, content: str) -> None:
        path = self._path(key)
        data = content.encode("utf-8", "surrogatepass")
        if _DIGEST.match(key) and path.exists():
            return  # content-addressed: the same key already holds the same text
        try:
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            raise StoreError(
                f"cannot write result {key!r} to {str(self.dir)!r}: {exc}",
                hint="check the directory's free space and permissions",
            ) from exc

    def _get(self, key: str) -> str | None:
        path = self._path(key)
        try:
            return path.read_bytes().decode("utf-8", "surrogatepass")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(
                f"cannot read result {key!r} from {str(self.dir)!r}: {exc}",
                hint="check the directory's permissions",
            ) from exc
