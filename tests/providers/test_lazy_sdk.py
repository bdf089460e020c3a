"""A provider imports its vendor SDK when it first needs its client, not when it is made: a
model string resolved by the CLI, a web server or a run's setup costs no SDK import (about a
second) until a model is called."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"

PROGRAM = """
import json, sys
from lovia import Agent
from lovia.providers import AnthropicProvider, OpenAIChatProvider, provider_from_string

def sdks():
    return sorted(m for m in ("anthropic", "openai") if m in sys.modules)

agent = Agent("a", model="openai:gpt-4o-mini")
made = [
    agent.resolve_provider(),
    provider_from_string("anthropic:claude-x"),
    OpenAIChatProvider("m", base_url="http://127.0.0.1:9/v1"),
]
before = [(repr(p), p.base_url) for p in made]
out = {"made": sdks()}
for p in made:
    p.client
out["used"] = sdks()
out["same_face"] = before == [(repr(p), p.base_url) for p in made]
print(json.dumps(out))
"""


def test_a_provider_imports_its_sdk_on_first_use_and_looks_the_same_before() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAM)],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PYTHONPATH": str(SRC),
            "PATH": "/usr/bin:/bin",
            "OPENAI_API_KEY": "k",
            "ANTHROPIC_API_KEY": "k",
        },
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "made": [],
        "used": ["anthropic", "openai"],
        "same_face": True,
    }


def test_two_threads_asking_at_once_get_one_client() -> None:
    """A provider shared by runs on several threads (``run_sync`` from a thread pool, two
    event loops) builds its client once: a second client built by a thread that asked at the
    same moment was handed out too, with its own connection pool, and never closed."""
    import threading

    from lovia.providers import AnthropicProvider, OpenAIChatProvider

    threads = 8
    for make in (
        lambda: OpenAIChatProvider("m", base_url="http://127.0.0.1:9/v1", api_key="k"),
        lambda: AnthropicProvider("m", base_url="http://127.0.0.1:9", api_key="k"),
    ):
        assert make().client is not None  # the SDK imported: each round races on the build
        old_interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-5)  # switch threads as often as possible: races show up
        try:
            for _ in range(6):
                provider = make()
                start = threading.Barrier(threads)
                got: list[object] = []

                def ask(
                    p: Any = provider, b: threading.Barrier = start, out: list[object] = got
                ) -> None:
                    b.wait()
                    out.append(p.client)

                pool = [threading.Thread(target=ask) for _ in range(threads)]
                for t in pool:
                    t.start()
                for t in pool:
                    t.join()
                assert len(got) == threads
                assert len({id(c) for c in got}) == 1, f"{len({id(c) for c in got})} clients"
                assert provider.client is got[0]
        finally:
            sys.setswitchinterval(old_interval)
