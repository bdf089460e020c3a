"""Real servers for tests: a free port, a wait until a started process is ready (for
``lovia web``: until it answers ``/healthz``), a stop, and an app served by uvicorn in a
thread of the test's own process (``InThread``)."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_web(
    command: list[str], *, env: dict[str, str] | None = None, quiet: bool = False
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``command`` (a ``lovia web`` command line) on a free port and wait until it
    answers; returns the process and its base URL. ``quiet``: its output is dropped (a
    server nobody reads from cannot fill a pipe and stall)."""
    port = free_port()
    proc = subprocess.Popen(
        [*command, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_ready(proc, lambda: _healthy(base), "the server")
    return proc, base


@contextmanager
def serving(
    command: list[str], *, env: dict[str, str] | None = None, quiet: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``start_web`` for a ``with`` block: the process and its base URL, stopped
    (``stop_web``) when the block ends, also when the test killed it meanwhile."""
    proc, base = start_web(command, env=env, quiet=quiet)
    try:
        yield proc, base
    finally:
        stop_web(proc)


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz").status_code == 200
    except httpx.TransportError:
        return False


def wait_until_ready(
    proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str, seconds: float = 30
) -> None:
    """Poll ``ready`` until it is true. A process that exits first or is not ready within
    ``seconds`` (or a Ctrl-C while waiting) is killed, never left running; the error then
    carries what it printed, if its output was piped."""
    deadline = time.monotonic() + seconds
    try:
        while not ready():
            if time.monotonic() > deadline or proc.poll() is not None:
                break
            time.sleep(0.1)
        else:
            return
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    proc.kill()
    out = proc.communicate()[0]
    code = proc.returncode
    raise RuntimeError(f"{what} did not start ({code}): {(out or b'').decode(errors='replace')}")


def stop_web(proc: subprocess.Popen[Any]) -> None:
    """Stop a server started by ``start_web``: SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout:
        proc.stdout.close()


def interrupt(proc: subprocess.Popen[Any]) -> tuple[Any, Any]:
    """Ctrl-C a ``lovia web`` process and collect its output; one that does not stop within
    30 s is killed and the test fails with what it printed (never left running)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"lovia web did not stop on Ctrl-C: {out!r} {err!r}") from None


class InThread:
    """uvicorn serving ``app`` on ``host`` (a free port) in a thread, from ``with`` to its
    end; ``port`` and ``url`` (on 127.0.0.1) say where."""

    def __init__(self, app: Any, host: str = "127.0.0.1") -> None:
        import uvicorn

        with socket.socket() as probe:
            probe.bind((host, 0))
            self.port: int = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host=host, port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> InThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "no server"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
