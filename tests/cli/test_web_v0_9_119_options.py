"""``lovia web`` started with lovia 0.9.119's flags and ``LOVIA_*`` variables: what maps onto
this server is honoured (flag, then variable, then default), what asks for a feature it does
not have is refused with a hint (exit 2), and values are checked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..web.conftest import decode

LOVIA = str(Path(sys.executable).with_name("lovia"))


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOVIA_", "OPENAI_"))}
    env.update(extra)
    return env


def lovia_web(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LOVIA, "web", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env or clean_env(),
    )


class Server:
    """A running ``lovia web``: its base URL, banner and process."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [LOVIA, "web", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        assert first.startswith("lovia web: open http://"), (first, self.proc.communicate())
        self.url = first.split("open ")[1].strip().split("?")[0].rstrip("/")
        self.banner = first + self.proc.stdout.readline()
        for _ in range(300):
            try:
                httpx.get(f"{self.url}/healthz")
                return
            except httpx.TransportError:
                assert self.proc.poll() is None, self.proc.communicate()
                time.sleep(0.1)

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return err


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    started: list[Server] = []

    def go(*args: str, env: dict[str, str] | None = None) -> Server:
        server = Server(list(args), tmp_path, env or clean_env())
        started.append(server)
        return server

    yield go
    for server in started:
        if server.proc.poll() is None:
            server.stop()


@pytest.mark.parametrize(
    ("flags", "env", "said"),
    [
        (["--workspace", "missing"], {}, "--workspace / LOVIA_WORKSPACE 'missing' is not a folder"),
        ([], {"LOVIA_WORKSPACE": "missing"}, "'missing' is not a folder"),
        (["--readonly", "--trusted"], {}, "--readonly and --trusted contradict"),
        ([], {"LOVIA_WORKSPACE_MODE": "wild"}, "LOVIA_WORKSPACE_MODE='wild'"),
    ],
)
def test_a_toolkit_option_that_cannot_work_is_refused(
    flags: list[str], env: dict[str, str], said: str, tmp_path: Path
) -> None:
    done = lovia_web(
        "--port", "0", *flags, cwd=tmp_path, env=clean_env(LOVIA_MODEL="openai:m", **env)
    )
    assert done.returncode == 2
    assert said in done.stderr and "lovia: hint:" in done.stderr, done.stderr
    assert not (tmp_path / ".lovia").exists()  # refused before anything was created


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        ([], {"LOVIA_PORT": "eighty"}, "LOVIA_PORT='eighty'"),
        ([], {"LOVIA_MAX_TURNS": "0"}, "LOVIA_MAX_TURNS='0'"),
        ([], {"LOVIA_LOG_LEVEL": "loud"}, "LOVIA_LOG_LEVEL='loud'"),
        ([], {"LOVIA_ROOT_PATH": "/lo?via"}, "LOVIA_ROOT_PATH '/lo?via' is not a path prefix"),
        (["--root-path", "/a b"], {}, "is not a path prefix"),
        (["--token", " "], {}, "--token is empty"),
        (["--instructions-file", "missing.md"], {}, "no instructions file at 'missing.md'"),
        (["--max-retries", "-1"], {}, "argument --max-retries: -1 is not"),
        (["--log-level", "loud"], {}, "argument --log-level"),
        (["--provider-timeout", "0"], {}, "argument --provider-timeout"),
    ],
)
def test_bad_values_are_clear_errors(
    args: list[str], env: dict[str, str], said: str, tmp_path: Path
) -> None:
    done = lovia_web("--demo", *args, cwd=tmp_path, env=clean_env(**env))
    assert done.returncode == 2
    assert said in done.stderr, done.stderr


def test_root_path_serves_the_page_under_a_proxy_prefix(start: Any, tmp_path: Path) -> None:
    """Behind a proxy that strips /lovia: the page names its scripts and the API relatively,
    and the server takes requests at the root as the proxy sends them."""
    server = start("--demo", "--port", "0", "--root-path", "/lovia/",
                   "--db", str(tmp_path / "p.db"), env=clean_env())  # fmt: skip
    page = httpx.get(f"{server.url}/").text
    assert 'src="static/app.js"' in page and 'href="static/style.css"' in page
    assert httpx.get(f"{server.url}/api/info").json()["configured"] is True
    assert httpx.get(f"{server.url}/static/api.js").status_code == 200
    # written without its slashes it is the same prefix, as 0.9.119 read it
    bare = start("--demo", "--port", "0", "--db", str(tmp_path / "q.db"),
                 env=clean_env(LOVIA_ROOT_PATH="lovia"))  # fmt: skip
    assert httpx.get(f"{bare.url}/api/info").json()["configured"] is True
    assert 'src="static/app.js"' in httpx.get(f"{bare.url}/").text
    servers = httpx.get(f"{bare.url}/api/openapi.json").json()["servers"]
    assert servers == [{"url": "/lovia"}]


def test_variables_configure_the_server_and_flags_win(start: Any, tmp_path: Path) -> None:
    env = clean_env(
        LOVIA_HOST="127.0.0.1",
        LOVIA_PORT="not-used",  # the flag wins, so the variable is not even read
        LOVIA_DB=str(tmp_path / "from-env.db"),
        LOVIA_TITLE="From env",
        LOVIA_WEB_TOKEN="env-token",
    )
    server = start("--demo", "--port", "0", "--title", "From flag", "--no-memory", env=env)
    assert "?token=env-token" in server.banner and "from-env.db" in server.banner
    assert httpx.get(f"{server.url}/api/sessions").status_code == 401
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}  # a probe: no token
    auth = {"Authorization": "Bearer env-token"}
    assert httpx.get(f"{server.url}/api/sessions", headers=auth).json() == []
    page = httpx.get(f"{server.url}/", headers=auth).text
    assert "<title>From flag</title>" in page
    assert (tmp_path / "from-env.db").exists()


def test_toolkit_flags_with_the_demo_agent_are_said_to_be_ignored(
    start: Any, tmp_path: Path
) -> None:
    server = start(
        "--demo", "--port", "0", "--no-memory", "--workspace", "nowhere", "--no-followups",
        "--db", str(tmp_path / "w.db"), env=clean_env(),
    )  # fmt: skip
    assert httpx.get(f"{server.url}/api/sessions").json() == []
    (agent,) = httpx.get(f"{server.url}/api/agents").json()
    assert (agent["workspace"], agent["memory"]) == (False, False)
    assert "--workspace, --no-memory shape the default assistant" in server.stop()


class FakeOpenAI:
    """An OpenAI-compatible chat server on 127.0.0.1 that records the requests it gets and
    answers "ok" (streamed), or 500 for the first ``fail`` requests."""

    def __init__(self, fail: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail = fail
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if len(outer.requests) <= outer.fail:
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "down"}}')
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0,
                         "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant",
                         "content": "ok"}, "finish_reason": None}]}  # fmt: skip
                end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                for part in (chunk, end):
                    self.wfile.write(f"data: {json.dumps(part)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()

    def env(self, **extra: str) -> dict[str, str]:
        return clean_env(
            LOVIA_MODEL="openai:test-model", OPENAI_API_KEY="k", OPENAI_BASE_URL=self.url, **extra
        )


def send(server: Server, text: str) -> list[dict[str, Any]]:
    sent = httpx.post(f"{server.url}/api/chat/stream", json={"message": text}, timeout=60)
    return decode(sent.text)


def answering(model: FakeOpenAI) -> list[dict[str, Any]]:
    """The model requests that answer the chat (not the ones that name it)."""
    return [r for r in model.requests if "short title" not in json.dumps(r)]


def test_agents_md_max_tokens_and_instructions_reach_the_default_agents_model(
    start: Any, tmp_path: Path
) -> None:
    model = FakeOpenAI()
    try:
        (tmp_path / "AGENTS.md").write_text("You answer like a pirate.")
        server = start("--port", "0", "--db", str(tmp_path / "a.db"), "--max-tokens", "77",
                       "--no-memory", env=model.env())  # fmt: skip
        assert send(server, "hi")[-1]["event"] == "done"
        first = answering(model)[0]
        assert first["max_tokens"] == 77
        assert first["messages"][0]["content"].startswith("You answer like a pirate.")
        server.stop()
        server = start("--port", "0", "--db", str(tmp_path / "a.db"), "--instructions", "Be terse.",
                       "--no-memory", env=model.env(LOVIA_MAX_TOKENS="12"))  # fmt: skip
        assert send(server, "hi")[-1]["event"] == "done"
        assert answering(model)[1]["max_tokens"] == 12
        assert answering(model)[1]["messages"][0]["content"].startswith("Be terse.")
    finally:
        model.close()


@pytest.mark.parametrize(("retries", "tries"), [("0", 1), ("1", 2)])
def test_max_retries_bounds_the_attempts_on_a_failing_provider(
    retries: str, tries: int, start: Any, tmp_path: Path
) -> None:
    model = FakeOpenAI(fail=10)
    try:
        server = start("--port", "0", "--db", str(tmp_path / "r.db"),
                       env=model.env(LOVIA_MAX_RETRIES=retries))  # fmt: skip
        assert send(server, "hi")[-1]["event"] == "error"
        assert len(answering(model)) == tries
    finally:
        model.close()


def test_max_turns_ends_a_run_that_keeps_calling_tools(start: Any, tmp_path: Path) -> None:
    (tmp_path / "loopy.py").write_text(
        "from lovia import Agent, tool\n"
        "from lovia.testing import ScriptedProvider, call\n"
        "@tool\nasync def ping() -> str:\n    'Ping.'\n    return 'pong'\n"
        "agent = Agent(name='loopy', instructions='x', tools=[ping],\n"
        "    model=ScriptedProvider([call('ping', {}) for _ in range(10)]))\n"
    )
    env = clean_env(
        PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]),
        LOVIA_APP="loopy:agent",
        LOVIA_MAX_TURNS="9",  # the flag wins
    )
    server = start("--port", "0", "--db", str(tmp_path / "t.db"), "--max-turns", "2", env=env)
    assert server.proc.stdout is not None
    assert server.proc.stdout.readline() == "lovia web: agent loopy\n"  # from LOVIA_APP
    last = send(server, "go")[-1]
    assert last["event"] == "error" and last["code"] == "max_turns"
    assert "all 2 turns" in json.dumps(last)


def test_check_probes_the_model_server_and_serves_nothing(tmp_path: Path) -> None:
    model = FakeOpenAI()
    try:
        done = lovia_web("--check", cwd=tmp_path, env=model.env())
        assert done.returncode == 0, done.stderr
        assert "model openai:test-model" in done.stdout and model.url in done.stdout
    finally:
        model.close()
    down = lovia_web("--check", cwd=tmp_path, env=model.env())  # nothing listens there now
    assert down.returncode == 2 and "cannot reach" in down.stdout
    none = lovia_web("--check", cwd=tmp_path)
    assert none.returncode == 2 and "no model configured" in none.stderr
    assert not (tmp_path / ".lovia").exists()


BUILT = """
from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.web import create_app


class Model:  # answers "ok" to every call: not a ScriptedProvider, so no feature is held back
    name = model = "m"
    supports_json_schema = False

    async def stream(self, entries, **kwargs):
        async for event in ScriptedProvider([text("ok")]).stream(entries, **kwargs):
            yield event


agent = Agent(name="bot", model=Model())
app = create_app(agent, title="Built", token="tk", db_path="built.db")
bare = create_app(agent, db_path="bare.db")


def factory():
    return create_app(agent, title="Made", db_path="made.db")
"""


def _built(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "built.py").write_text(BUILT)
    return clean_env(PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))


def test_an_app_built_with_create_app_is_served_as_built(start: Any, tmp_path: Path) -> None:
    """0.9.119's ``--app`` takes an app built with ``create_app()``: its auth, storage and
    title are the app's; the options lovia web would pass to ``create_app`` are ignored,
    with a warning."""
    env = _built(tmp_path)
    server = start("--app", "built:app", "--port", "0", "--title", "Flag", "--db", "flag.db",
                   env=env)  # fmt: skip
    assert "?token=tk" in server.banner
    assert httpx.get(f"{server.url}/api/info").status_code == 401
    info = httpx.get(f"{server.url}/api/info", headers={"Authorization": "Bearer tk"}).json()
    assert info["title"] == "Built" and info["agents"] == ["bot"]
    sent = httpx.post(f"{server.url}/api/chat", json={"message": "hi"},
                      headers={"Authorization": "Bearer tk"}, timeout=30)  # fmt: skip
    assert sent.json()["output"] == "ok"
    err = server.stop()
    assert "ignoring --db, --title" in err or "ignoring --title, --db" in err, err
    assert (tmp_path / "built.db").exists() and not (tmp_path / "flag.db").exists()
    made = start("--app", "built:factory", "--port", "0", env=env)  # a factory returning one
    assert httpx.get(f"{made.url}/api/info").json()["title"] == "Made"


def test_a_built_app_without_auth_is_refused_off_loopback(tmp_path: Path) -> None:
    """As ``serve()`` refuses it: an app from ``create_app`` with neither ``token`` nor
    ``auth`` is not served on another address, and ``--token`` does not add one to it."""
    env = _built(tmp_path)
    for extra in ([], ["--token", "zz"]):
        done = lovia_web("--app", "built:bare", "--host", "0.0.0.0", "--port", "0", *extra,
                         cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert "refusing to serve an app built without authentication" in done.stderr
        assert "lovia: hint:" in done.stderr


def test_an_app_agent_gets_follow_ups_unless_turned_off(start: Any, tmp_path: Path) -> None:
    """The bundled CLI opts in to follow-up suggestions on its own behalf for an ``--app``
    agent too; ``--no-followups`` or ``LOVIA_FOLLOWUPS=0`` turns them off."""
    env = _built(tmp_path)

    def followups(*flags: str, **extra: str) -> bool:
        server = start("--app", "built:agent", "--port", "0", "--db", str(tmp_path / "f.db"),
                       *flags, env={**env, **extra})  # fmt: skip
        on = httpx.get(f"{server.url}/api/info").json()["features"]["followups"]
        server.stop()
        return bool(on)

    assert followups() is True
    assert followups("--no-followups") is False
    assert followups(LOVIA_FOLLOWUPS="0") is False


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


def test_the_default_assistant_has_its_toolkit_and_the_flags_shape_it(
    start: Any, tmp_path: Path
) -> None:
    model = FakeOpenAI()
    work = tmp_path / "work"
    work.mkdir()
    skill = tmp_path / ".agents" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Says hello.\n---\nHi.\n")
    try:
        server = start("--port", "0", "--db", str(tmp_path / "k.db"), "--workspace", str(work),
                       "--memory-dir", str(tmp_path / "mem"), env=model.env())  # fmt: skip
        (agent,) = httpx.get(f"{server.url}/api/agents").json()
        assert (agent["workspace"], agent["memory"]) == (True, True)
        listed = httpx.get(f"{server.url}/api/workspace/files", params={"path": "."})
        assert listed.status_code == 200
        assert send(server, "hi")[-1]["event"] == "done"
        full = tool_names(answering(model)[0])
        assert {"read_file", "write_file"} <= full  # the workspace's
        assert any("todo" in name for name in full)
        assert any("memory" in name or "recall" in name for name in full)
        assert any("skill" in name for name in full)
        assert any("subagent" in name for name in full)
        # scheduled runs and new chats, in the server's own store (as 0.9.119's assistant)
        assert {"schedule_run", "list_schedules", "cancel_schedule", "start_session"} <= full
        # the clock, the web, a question to the person, and what the page draws
        assert {"now", "web_fetch", "web_search", "ask_human"} <= full
        assert {"show_chart", "show_table", "show_html"} <= full
        system = json.dumps(answering(model)[0]["messages"][0])
        assert "Today's date is" in system and "Markdown" in system
        assert "greet" in json.dumps(answering(model)[0]["messages"][0])
        server.stop()
        count = len(model.requests)
        server = start("--port", "0", "--db", str(tmp_path / "k.db"), "--no-workspace",
                       "--no-memory", "--no-subagents", env=model.env())  # fmt: skip
        (agent,) = httpx.get(f"{server.url}/api/agents").json()
        assert (agent["workspace"], agent["memory"]) == (False, False)
        assert send(server, "hi")[-1]["event"] == "done"
        later = [r for r in model.requests[count:] if "short title" not in json.dumps(r)]
        bare = tool_names(later[0])
        assert not {"read_file", "write_file"} & bare
        assert not any("subagent" in name for name in bare)
        assert any("todo" in name for name in bare)  # todos stay
        assert "start_session" in bare
    finally:
        model.close()
