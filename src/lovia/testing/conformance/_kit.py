"""What every conformance check stands on: the factory, the broken-promise error, the skip
for a capability a store does not offer, and a second process opening the same store.

Nothing here imports pytest: the checks are plain coroutines, and ``suite`` turns them into
pytest tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...stores.capabilities import capability_methods, has_capability
from ._factory import GO, PROBE, Factory, close_store, load_factory, open_store

__all__ = [
    "BrokenPromise",
    "Check",
    "Factory",
    "Kit",
    "NotOffered",
    "load_factory",
]

Kind = Literal["session", "checkpointer"]

_SHARED: dict[tuple[str, str | None], bool] = {}


class BrokenPromise(AssertionError):
    """A store broke one promise of the contract; the message starts with the promise."""


class NotOffered(Exception):
    """The store does not offer what a check needs (a capability); the check is skipped."""


@dataclass(frozen=True)
class Check:
    """One promise a store keeps: ``name`` is the test's name, ``run`` checks it."""

    name: str
    run: Callable[[Kit], Awaitable[None]]
    doc: str = ""


def spec_of(factory: Any) -> str | None:
    """The ``MODULE:ATTR`` another process imports ``factory`` by, when it has one."""
    if isinstance(factory, str):
        return factory
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", "")
    if not module or not qualname or "<" in qualname:
        return None
    return f"{module}:{qualname}"


class Kit:
    """What a check gets: the store under test (``store``), a way to open it again on the
    same directory (``reopen``), and a second process on that directory (``spawn``)."""

    def __init__(self, kind: Kind, factory: Factory | str, path: Path) -> None:
        self.kind = kind
        self.spec = spec_of(factory)
        self.factory: Factory = load_factory(factory) if isinstance(factory, str) else factory
        self.path = path
        self.store: Any = None
        self._opened: list[Any] = []

    async def start(self) -> None:
        self.store = await self.reopen()

    async def reopen(self) -> Any:
        """The factory called again on the same directory (the same data, when the store
        keeps it there; a new empty store otherwise)."""
        store = await open_store(self.factory, self.path)
        self._opened.append(store)
        return store

    async def close(self) -> None:
        for store in reversed(self._opened):
            await close_store(store)

    # -- promises ---------------------------------------------------------------------------

    @staticmethod
    def expect(ok: bool, promise: str, *, expected: Any = None, got: Any = None) -> None:
        """Raise ``BrokenPromise(promise)`` unless ``ok``; ``expected`` / ``got`` add the
        detail a reader needs to find the fault."""
        if ok:
            return
        lines = [f"broken promise: {promise}"]
        if expected is not None or got is not None:
            lines += [f"  expected: {expected!r}", f"  got:      {got!r}"]
        raise BrokenPromise("\n".join(lines))

    @staticmethod
    def require(ok: bool, reason: str) -> None:
        """Skip the check (with ``reason``) unless the store offers what it needs."""
        if not ok:
            raise NotOffered(reason)

    def require_capability(self, capability: type) -> None:
        """Skip the check unless the store declares ``capability`` (a protocol of
        ``lovia.stores.capabilities``) by having its methods."""
        if has_capability(self.store, capability):
            return
        names = capability_methods(capability)
        missing = [n for n in names if not callable(getattr(self.store, n, None))] or names
        raise NotOffered(
            f"{type(self.store).__name__} does not offer {', '.join(missing)}() "
            f"(the optional capability {capability.__name__})"
        )

    # -- other processes -------------------------------------------------------------------

    def spawn(self, action: str, *args: str) -> subprocess.Popen[str]:
        """Start a process that opens the store with the factory on this directory and runs
        ``action`` of ``_worker``; it prints one JSON line per step."""
        if self.spec is None:
            raise NotOffered(
                "the factory is not importable by name (MODULE:FACTORY), so no other "
                "process can open the store"
            )
        env = dict(os.environ)
        # the importable names of this process (its working directory for "") in the other one
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p or os.curdir) for p in sys.path)
        command = [
            sys.executable,
            "-m",
            "lovia.testing.conformance._worker",
            self.kind,
            self.spec,
            str(self.path),
            action,
            *args,
        ]
        return subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )

    async def run_process(self, action: str, *args: str, timeout: float = 120.0) -> list[Any]:
        """Run ``action`` in another process to its end; its JSON lines."""
        proc = self.spawn(action, *args)
        out, err = await asyncio.to_thread(proc.communicate, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(
                f"the second process ({action}) failed with exit status {proc.returncode}:\n"
                f"{err[-3000:]}"
            )
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    async def run_together(self, action: str, tags: Sequence[str], count: int) -> None:
        """Start one process per tag doing ``action TAG COUNT``, let them all begin writing at
        the same moment, and wait for them to finish."""
        procs = [self.spawn(action, tag, str(count)) for tag in tags]
        try:
            for proc in procs:  # each says it is ready once its store is open
                assert proc.stdout is not None
                await asyncio.to_thread(proc.stdout.readline)
            (self.path / GO).touch()
        finally:
            failed = []
            for proc in procs:
                _out, err = await asyncio.to_thread(proc.communicate, timeout=180)
                if proc.returncode != 0:
                    failed.append(err[-3000:])
        self.expect(
            not failed,
            f"concurrent writers: {len(failed)} of {len(procs)} processes writing at once failed",
            got="\n".join(failed),
        )

    async def require_shared(self) -> None:
        """Skip unless a store another process opens on this directory sees this one's
        writes (a file, a database: not a store in the process's memory). The answer is the
        factory's, so it is found out once per factory."""
        key = (self.kind, self.spec)
        seen = _SHARED.get(key)
        if seen is None:
            await self.run_process("probe")
            seen = _SHARED[key] = await self._probe_seen()
        self.require(
            seen,
            "the store is not shared between processes (a store the factory opened on the "
            "same directory in another process wrote a run this process does not see)",
        )

    async def _probe_seen(self) -> bool:
        store = await self.reopen()
        if self.kind == "session":
            return bool(await store.segments(PROBE))
        return await store.load(PROBE) is not None
