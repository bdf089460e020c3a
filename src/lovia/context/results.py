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
from urllib.parse import quote

from ..errors import StoreError, UserError
from ..stores.maintenance import output_digest

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

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")  # stored under its own name
_DIGEST = re.compile(r"^[0-9a-f]{24}\Z")


@runtime_checkable
class ResultStore(Protocol):
    """Keeps text under a key: ``put(key, content)`` and ``get(key) -> str | None``.

    The methods may be coroutines (as the built-in stores' are, and lovia 0.9.119's
    protocol has them) or plain functions, which are then called off the event loop.
    ``put`` replaces what the key held; ``get`` of an unknown key returns ``None``. Keys are
    any text (the policy uses ``content_digest`` values and ``call_key`` lists).
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
    """The key a tool output is archived under (a short sha256 hex digest); the reference
    every marker names, a session's trim marker included."""
    return output_digest(content)


def call_key(call_id: str) -> str:
    """The key under which the digests of ``call_id``'s outputs are listed."""
    return "call-" + content_digest(call_id)


class InvalidStoreArgument(UserError, ValueError):
    """A result store was given a bad key or size (also a ``ValueError``, as in 0.9.119)."""


class ResultStoreError(StoreError, OSError):
    """A file result store could not read or write (also an ``OSError``, as in 0.9.119)."""


def check_key(key: str) -> str:
    """``key`` if it is a string, else ``InvalidStoreArgument``."""
    if not isinstance(key, str):
        raise InvalidStoreArgument(
            f"invalid result store key {key!r}: keys are strings",
            hint="use content_digest(output) as the key",
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
    """Keeps the last ``max_entries`` results in memory (least recently used go first).

    ``max_entries=None`` keeps everything (only for short-lived stores: nothing is evicted).
    """

    def __init__(self, max_entries: int | None = 1024) -> None:
        if max_entries is not None and (
            not isinstance(max_entries, int) or isinstance(max_entries, bool) or max_entries < 1
        ):
            raise InvalidStoreArgument(
                f"max_entries must be at least 1 or None, got {max_entries!r}",
                hint="use InMemoryResultStore(max_entries=1024) or a larger number",
            )
        self.max_entries = max_entries
        self._max = max_entries
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()  # called from worker threads

    async def put(self, key: str, content: str) -> None:
        check_key(key)
        with self._lock:
            self._items[key] = content
            self._items.move_to_end(key)
            while self.max_entries is not None and len(self._items) > self.max_entries:
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
    """One file per result in ``dir`` (created if missing), each written atomically.

    A key of 1-128 letters, digits, ``_`` or ``-`` (every digest the policy writes) is the
    file's name; any other key is named by its sha256, so two keys never share a file. A
    directory written by lovia 0.9.119 is read as well (its own file names are tried).
    """

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
        check_key(key)
        if _PLAIN_KEY.match(key):
            return self.dir / (key + ".txt")
        return self.dir / (
            "~" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest() + ".txt"
        )

    def _legacy_path(self, key: str) -> Path:
        """The name lovia 0.9.119 gave ``key``'s file (quoted prefix, sha1 suffix)."""
        digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return self.dir / f"{quote(key, safe='')[:80]}-{digest}.txt"

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
            raise ResultStoreError(
                f"cannot write result {key!r} to {str(self.dir)!r}: {exc}",
                hint="check the directory's free space and permissions",
            ) from exc

    def _get(self, key: str) -> str | None:
        for path in (self._path(key), self._legacy_path(key)):
            try:
                return path.read_bytes().decode("utf-8", "surrogatepass")
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ResultStoreError(
                    f"cannot read result {key!r} from {str(self.dir)!r}: {exc}",
                    hint="check the directory's permissions",
                ) from exc
        return None
