"""A model server that refuses the API key (HTTP 401) is found before anyone types: ``lovia
web --check`` says so and fails, and the page's ``/api/info`` carries the same problem, which
disables sending (issue 36: --check printed ok, and the page said nothing until a message
failed). The server is a real HTTP server on 127.0.0.1 that answers every request 401 (or
403), as OpenAI's does for a wrong key."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from .test_web_v0_9_119_options import clean_env, lovia_web, start

__all__ = ["start"]  # the fixture, used here by name

WRONG_KEY = "sk-wrong-key-1234"


class RefusingServer:
    """An OpenAI-compatible server that refuses every request with ``status``, echoing the
    key it was sent in its error message (as some servers do), and records the paths."""

    def __init__(self, status: int) -> None:
        self.paths: list[tuple[str, str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                auth = self.headers.get("Authorization", "")
                outer.paths.append((self.command, self.path, auth))
                said = f"Incorrect API key provided: {auth[7:]}"
                body = {"error": {"message": said, "code": "invalid_api_key"}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def env(self) -> dict[str, str]:
        return clean_env(
            LOVIA_MODEL="openai:test-model", OPENAI_API_KEY=WRONG_KEY, OPENAI_BASE_URL=self.url
        )

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def refusing(request: pytest.FixtureRequest) -> Iterator[RefusingServer]:
    server = RefusingServer(getattr(request, "param", 401))
    yield server
    server.close()


def test_check_says_the_key_was_refused_and_fails(refusing: RefusingServer, tmp_path: Path) -> None:
    done = lovia_web("--check", cwd=tmp_path, env=refusing.env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refused the API key (HTTP 401" in done.stdout, done.stdout
    assert "hint: set OPENAI_API_KEY to a key this server accepts" in done.stdout
    assert "no model" not in done.stdout + done.stderr and "agent lovia: ok" not in done.stdout
    assert WRONG_KEY not in done.stdout + done.stderr  # the server echoed it; we do not
    # the probe was the free model list, sent with the key, and nothing else
    assert refusing.paths == [("GET", "/v1/models", f"Bearer {WRONG_KEY}")]
    assert not (tmp_path / ".lovia").exists()


def test_the_page_gets_the_same_problem_and_sending_is_disabled(
    refusing: RefusingServer, start: Any, tmp_path: Path
) -> None:
    server = start("--port", "0", "--db", str(tmp_path / "k.db"), env=refusing.env())
    info = httpx.get(f"{server.url}/api/info", timeout=30).json()
    problem = info["setup_problem"]
    assert info["configured"] is True  # a model is configured: its key is what is wrong
    assert "refused the API key (HTTP 401" in problem["message"] and problem["blocking"] is True
    assert "OPENAI_API_KEY" in problem["hint"] and WRONG_KEY not in json.dumps(info)
    assert [(p["agent"], p["blocking"]) for p in info["problems"]] == [("lovia", True)]


@pytest.mark.parametrize("refusing", [403], indirect=True)
def test_a_403_is_a_warning_that_leaves_sending_open(
    refusing: RefusingServer, start: Any, tmp_path: Path
) -> None:
    """Some keys may chat but not list models: a 403 is said, but does not block."""
    done = lovia_web("--check", cwd=tmp_path, env=refusing.env())
    assert done.returncode == 2 and "refused this API key access (HTTP 403" in done.stdout
    server = start("--port", "0", "--db", str(tmp_path / "k.db"), env=refusing.env())
    problem = httpx.get(f"{server.url}/api/info", timeout=30).json()["setup_problem"]
    assert "HTTP 403" in problem["message"] and problem["blocking"] is False
