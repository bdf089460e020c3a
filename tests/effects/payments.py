"""A local payment server that honours ``Idempotency-Key``, and the trials that kill a
charging run at random points and check every logical charge was made once (issue 32).

The server (a real HTTP server on 127.0.0.1) keeps one charge per key: a request with a key
it has seen gets the first answer again and charges nothing; the same key with another
amount is refused (422). A request without a key is refused (400), so a tool that forgot
the key fails loudly instead of charging twice.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHILD = Path(__file__).with_name("child.py")
ROOT = CHILD.parents[2]

# where a charging attempt may die: before a charge's request, after the server answered
# (the charge made, not yet recorded), after a tool result was saved, inside a model call
KILL_POINTS = [
    *(f"{kind}:{n}" for kind in ("before", "after", "saved") for n in (1, 2, 3)),
    "model:1",
    "model:2",
]
EXPECTED = [100, 100, 250]  # the charges the scripted run asks for


class Ledger:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_key: dict[str, dict[str, Any]] = {}
        self.charges: list[dict[str, Any]] = []  # every charge actually made
        self.replays = 0  # requests answered from the key's first answer

    def reset(self) -> None:
        with self.lock:
            self.by_key.clear()
            self.charges.clear()
            self.replays = 0


def _handler(ledger: Ledger) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            key = self.headers.get("Idempotency-Key")
            if not key:
                return self._answer(400, {"error": "Idempotency-Key required"})
            with ledger.lock:
                first = ledger.by_key.get(key)
                if first is not None:
                    if first["cents"] != body["cents"]:
                        return self._answer(422, {"error": "key reused for another charge"})
                    ledger.replays += 1
                    return self._answer(200, first)
                charge = {"charge": f"ch_{len(ledger.charges) + 1}", "cents": body["cents"]}
                ledger.charges.append({**charge, "key": key})
                ledger.by_key[key] = charge
            self._answer(200, charge)

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def payment_server() -> Iterator[tuple[str, Ledger]]:
    ledger = Ledger()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(ledger))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", ledger
    finally:
        server.shutdown()
        server.server_close()


def attempt(tmp: Path, scenario: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """One worker process driving the run (it takes the lease of any killed one over)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, str(CHILD), str(tmp / "run.db"), str(tmp / "log.jsonl"), scenario, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def trial(
    tmp: Path, url: str, ledger: Ledger, rng: random.Random, *, store: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Kill one to three workers at random points, then let one finish: the charges made.
    ``store``: the child's store options (``("--dsn", DSN, "--prefix", P)`` for PostgreSQL;
    SQLite by default)."""
    ledger.reset()
    tmp.mkdir(parents=True, exist_ok=True)
    kills = 0
    for _ in range(rng.randint(1, 3)):
        done = attempt(tmp, "pay", "--url", url, *store, "--kill", rng.choice(KILL_POINTS))
        if done.returncode == -signal.SIGKILL:
            kills += 1
        elif done.returncode != 0:
            raise AssertionError(done.stderr)
    final = attempt(tmp, "pay", "--url", url, *store)
    if final.returncode != 0:
        raise AssertionError(final.stderr)
    return {
        "kills": kills,
        "output": json.loads(final.stdout)["output"],
        "cents": sorted(c["cents"] for c in ledger.charges),
        "keys": len({c["key"] for c in ledger.charges}),
        "replays": ledger.replays,
    }
