"""The real ``lovia`` entry point in subprocesses: help, chat, sessions, runs and web."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.testing import ScriptedProvider, call, text

ROOT = Path(__file__).resolve().parents[2]
LOVIA = str(Path(sys.executable).with_name("lovia"))


def lovia(
    *args: str, cwd: Path = ROOT, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LOVIA, *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60
    )


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


COMMANDS = [
    [],
    ["web"],
    ["chat"],
    ["sessions"],
    *[["sessions", a] for a in ("list", "show", "export", "trim", "rewind", "clear")],
    ["runs"],
    *[["runs", a] for a in ("list", "show", "resume", "delete")],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "lovia")
def test_every_command_has_help(command: list[str]) -> None:
    done = lovia(*command, "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: lovia")
    if command and command[-1] not in ("sessions", "runs"):
        assert "--db" in done.stdout or not command


def test_chat_streams_and_handles_history_and_rewind(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    script = "calculate 2+3\n/history\n/rewind 2\n/history\n/new\n/history\n/quit\n"
    done = lovia("chat", "--demo", "--db", str(db), "--session", "s1", stdin=script)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[tool] calculate" in out and "The result is **5**." in out
    assert "[3] assistant: The result is **5**." in out
    assert "[removed 3 entries]" in out  # the call lost its result, so it went too (S10)
    assert "[no history yet]" in out  # after /new
    shown = as_json(lovia("sessions", "show", "s1", "--db", str(db), "--json"))
    assert [e["type"] for e in shown] == ["input"]


def test_ctrl_c_in_chat_stops_the_run_like_the_stop_button(tmp_path: Path) -> None:
    """S6: the partial run is kept without its dangling call; the chat goes on."""
    db = tmp_path / "chat.db"
    proc = subprocess.Popen(
        [LOVIA, "chat", "--demo", "--db", str(db), "--session", "s2"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("wait 20\n")
    proc.stdin.flush()
    seen = ""
    while "[tool] wait" not in seen:
        seen += proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    while "[stopped" not in seen:
        line = proc.stdout.readline()
        assert line, f"chat ended early: {seen}"
        seen += line
    out, err = proc.communicate("/history\n", timeout=30)
    assert proc.returncode == 0, err
    assert "[0] user: wait 20" in out and "[1]" not in out
    runs = as_json(lovia("runs", "list", "--db", str(db), "--json"))
    assert runs == []  # the stopped run's checkpoint is deleted


def test_chat_without_a_model_says_which_variables_to_set(tmp_path: Path) -> None:
    done = lovia("chat", "--db", str(tmp_path / "x.db"), stdin="")
    assert done.returncode == 2
    assert "LOVIA_MODEL" in done.stderr and "OPENAI_API_KEY" in done.stderr


def test_store_commands_refuse_a_missing_database(tmp_path: Path) -> None:
    done = lovia("sessions", "list", "--db", str(tmp_path / "none.db"))
    assert done.returncode == 2 and "no database" in done.stderr and "hint" in done.stderr
    assert not (tmp_path / "none.db").exists()


@tool
def fetch(page: int) -> str:
    """Return a long page."""
    return f"page {page}: " + "x" * 1000


def _fill(db: Path) -> None:
    async def go() -> None:
        model = ScriptedProvider(
            [call("fetch", {"page": 1}), text("got one"), call("fetch", {"page": 2}), text("two")]
        )
        agent = Agent("a", model=model, tools=[fetch])
        async with SQLiteSession(db, wal=True) as s, SQLiteCheckpointer(db, wal=True) as cp:
            from lovia import CheckpointOptions

            for q in ("first", "second"):
                await Runner.run(
                    agent, q, session=s, session_id="u1", checkpoint=CheckpointOptions(cp)
                )

    asyncio.run(go())


def test_sessions_commands_list_show_export_trim_rewind_clear(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _fill(db)
    d = str(db)
    listed = as_json(lovia("sessions", "list", "--db", d, "--json"))
    assert [(s["session_id"], s["runs"], s["entries"], s["title"]) for s in listed] == [
        ("u1", 2, 8, "first")
    ]
    shown = as_json(lovia("sessions", "show", "u1", "--db", d, "--json"))
    assert [e["index"] for e in shown] == list(range(8))
    out = tmp_path / "u1.json"
    lovia("sessions", "export", "u1", "--db", d, "--out", str(out))
    exported = json.loads(out.read_text())
    assert [len(r["entries"]) for r in exported["runs"]] == [4, 4]
    trimmed = as_json(lovia("sessions", "trim", "u1", "--db", d, "--keep-chars", "10", "--json"))
    assert trimmed == {"trimmed": 1}
    again = as_json(lovia("sessions", "trim", "u1", "--db", d, "--keep-chars", "10", "--json"))
    assert again == {"trimmed": 0}  # S8: idempotent
    second_run = exported["runs"][1]["run_id"]
    rewound = as_json(lovia("sessions", "rewind", "u1", "--db", d, "--keep", "4", "--json"))
    assert rewound == {"removed": 4, "checkpoints_deleted": [second_run]}  # S11
    runs = as_json(lovia("runs", "list", "--db", d, "--json"))
    assert [r["run_id"] for r in runs] == [exported["runs"][0]["run_id"]]
    human = lovia("sessions", "show", "u1", "--db", d)
    assert "[3] assistant: got one" in human.stdout and "[4]" not in human.stdout
    cleared = as_json(lovia("sessions", "clear", "u1", "--db", d, "--json"))
    assert cleared["checkpoints_deleted"] == [exported["runs"][0]["run_id"]]
    assert as_json(lovia("sessions", "list", "--db", d, "--json")) == []
    assert as_json(lovia("runs", "list", "--db", d, "--json")) == []


def _interrupted_run(db: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A run of tests.web.apps' blocking agent, cancelled while its tool runs."""
    sys.path.insert(0, str(ROOT))
    from tests.web.apps import blocking

    monkeypatch.setenv("LOVIA_TEST_BLOCK", "1")

    async def go() -> str:
        from lovia import CheckpointOptions, RunCancelled

        async with SQLiteSession(db, wal=True) as s, SQLiteCheckpointer(db, wal=True) as cp:
            opts = CheckpointOptions(cp, "run-1")
            handle = Runner.stream(blocking, "go", session=s, session_id="c1", checkpoint=opts)
            async for event in handle:
                if event.type == "tool_call_started":
                    handle.cancel("test")
            with pytest.raises(RunCancelled):
                await handle.result()
        return "run-1"

    try:
        return asyncio.run(go())
    finally:
        monkeypatch.delenv("LOVIA_TEST_BLOCK")


def test_runs_commands_list_show_resume_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C7/C10 from the CLI: an interrupted run is listed, resumed to completion, deleted."""
    db = tmp_path / "r.db"
    run_id = _interrupted_run(db, monkeypatch)
    d = str(db)
    listed = as_json(lovia("runs", "list", "--db", d, "--status", "interrupted", "--json"))
    assert [(r["run_id"], r["session_id"]) for r in listed] == [(run_id, "c1")]
    shown = as_json(lovia("runs", "show", run_id, "--db", d, "--json"))
    assert [e["type"] for e in shown["entries"]] == ["input", "tool_call"]
    resumed = lovia("runs", "resume", run_id, "--db", d, "--app", "tests.web.apps:agents")
    assert resumed.returncode == 0, resumed.stderr
    assert "finished after unblocked once" in resumed.stdout
    assert as_json(lovia("runs", "show", run_id, "--db", d, "--json"))["status"] == "completed"
    history = as_json(lovia("sessions", "show", "c1", "--db", d, "--json"))
    assert [e["type"] for e in history] == ["input", "tool_call", "tool_result", "assistant_text"]
    deleted = as_json(lovia("runs", "delete", run_id, "--db", d, "--json"))
    assert deleted == {"deleted": run_id, "existed": True}
    assert lovia("runs", "show", run_id, "--db", d).returncode == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_web_on_a_public_host_prints_a_generated_token_and_requires_it(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [LOVIA, "web", "--host", "0.0.0.0", "--port", str(port), "--db", str(tmp_path / "w.db")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "LOVIA_MODEL"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(f"lovia web: open http://0.0.0.0:{port}/?token=")
        token = first.strip().split("?token=")[1]
        banner = proc.stdout.readline() + proc.stdout.readline()
        assert "no model configured" in banner and "LOVIA_MODEL" in banner
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                refused = httpx.get(f"{base}/api/sessions")
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        assert refused.status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        health = httpx.get(f"{base}/api/info", headers=auth).json()
        assert "LOVIA_MODEL" in health["setup_hint"] and health["configured"] is False
        assert httpx.get(f"{base}/api/sessions", headers=auth).json() == []
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_every_command_and_route_is_in_the_docs() -> None:
    docs = (ROOT / "docs" / "web.md").read_text()
    for command in COMMANDS:
        if command:
            assert f"lovia {' '.join(command)}" in docs, command
    from lovia.web import ChatStore, create_app

    paths = create_app({}, store=ChatStore.in_memory()).openapi()["paths"]
    for path, methods in paths.items():
        for method in methods:
            assert f"{method.upper()} {path.replace('{session_id}', '{id}')}" in docs, path


def test_the_cli_and_the_chat_supervisor_load_without_fastapi(tmp_path: Path) -> None:
    """FastAPI and uvicorn are the web extra: only create_app and 'lovia web' need them."""
    code = (
        "import sys, lovia, lovia.cli, lovia.cli.chat, lovia.cli.stores, lovia.chats, "
        "lovia.demo; "
        "lovia.cli.main(['sessions', 'list', '--db', sys.argv[1]]); "
        "lovia.cli.main(['runs', 'list', '--db', sys.argv[1]]); "
        "print(sorted(m for m in ('fastapi', 'uvicorn', 'starlette', 'lovia.web') "
        "if m in sys.modules), file=sys.stderr)"
    )
    db = str(tmp_path / "lovia.db")

    async def create() -> None:
        async with SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True):
            pass

    asyncio.run(create())
    done = subprocess.run([sys.executable, "-c", code, db], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def _postgres_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        return True
    except OSError:
        return False


def _wait_until_serving(base: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{base}/healthz")
            return
        except httpx.TransportError:
            assert time.monotonic() < deadline and proc.poll() is None, "lovia web never came up"
            time.sleep(0.1)


def test_a_database_url_password_is_never_printed(tmp_path: Path) -> None:
    """The banner and error messages show a postgresql:// --db with its password masked."""
    url = "postgresql://postgres:hunter2@127.0.0.1:5432/test?password=hunter2"
    port = _free_port()
    proc = subprocess.Popen(
        [LOVIA, "web", "--port", str(port), "--db", url],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "LOVIA_MODEL"},
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline() + proc.stdout.readline()
        if banner:
            _wait_until_serving(f"http://127.0.0.1:{port}", proc)  # stop it once it is up
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"lovia web did not stop on SIGINT: {err[-2000:]}")
    if banner:
        assert "stored in postgresql://postgres:***@127.0.0.1:5432/test?password=***" in banner
    else:  # the database is there but unusable (e.g. tables of a newer lovia): said on stderr
        assert proc.returncode == 2 and "lovia: error:" in err, err
    assert "hunter2" not in banner + out + err
    if _postgres_up():
        missing = lovia("runs", "show", "no-such-run", "--db", url)
        assert missing.returncode == 2
        if "schema version" not in missing.stderr:  # tables of another lovia: no URL shown
            assert "postgres:***@127.0.0.1" in missing.stderr
        assert "hunter2" not in missing.stdout + missing.stderr


def test_version_prints_the_package_version_and_tells_this_lovia_from_0_9_119() -> None:
    """0.9.119 prints ``lovia 0.9.119``; this lovia says what it is and where it comes from
    (issue 36: the docs' install line had installed the published one)."""
    from lovia import __version__

    done = lovia("--version")
    root = Path(__file__).resolve().parents[2]
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"lovia {__version__} (durable core; from the checkout at {root})\n"
    assert done.stdout.split()[1] == __version__ != "0.9.119"  # what scripts read


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """``lovia sessions show ID | head -1``: no BrokenPipeError traceback, exit 141 (the
    output, about 400 KB, is far more than a pipe holds, so the pipe does break)."""
    db = tmp_path / "many.db"

    async def fill() -> None:
        from lovia import InputEntry

        entries = [InputEntry(content=f"message {i} " + "x" * 120) for i in range(3000)]
        async with SQLiteSession(db, wal=True) as s:
            await s.append("big", entries)

    asyncio.run(fill())
    pipeline = f"'{LOVIA}' sessions show big --db '{db}' | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", pipeline],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141


def test_a_taken_port_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = lovia("web", "--demo", "--db", str(tmp_path / "x.db"), "--port", str(port))
    assert done.returncode == 2
    assert done.stdout == ""  # no URL printed for a server that never listened
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert f"--port {port + 1}" in done.stderr and "Errno" not in done.stderr
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("value", ["-1", "0", "nan", "soon"])
def test_a_lease_ttl_that_is_not_a_positive_number_is_refused(value: str) -> None:
    done = lovia("web", "--demo", "--lease-ttl", value)
    assert done.returncode == 2 and "--lease-ttl" in done.stderr


def test_the_terminal_chat_renders_markdown_with_rich(tmp_path: Path) -> None:
    pytest.importorskip("rich")
    db = tmp_path / "md.db"
    script = "calculate 6 * 7\n/quit\n"
    done = lovia("chat", "--demo", "--markdown", "--db", str(db), stdin=script)
    assert done.returncode == 0, done.stderr
    assert "**42**" not in done.stdout  # rendered, not raw
    assert "\x1b[1m" in done.stdout and "42" in done.stdout  # bold, as the Markdown said
    plain = lovia("chat", "--demo", "--plain", "--db", str(db), stdin=script)
    assert "The result is **42**." in plain.stdout


def test_the_terminal_chat_refuses_a_model_without_its_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [LOVIA, "chat", "--db", str(tmp_path / "c.db")],
        cwd=ROOT,
        input="hi\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "LOVIA_MODEL": "openai:gpt-4.1"},
    )
    assert done.returncode == 2
    assert "no API key" in done.stderr and "OPENAI_API_KEY" in done.stderr


def test_make_web_takes_port_and_host() -> None:
    done = subprocess.run(
        ["make", "-n", "web", "PORT=8123", "HOST=0.0.0.0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--port 8123 --host 0.0.0.0" in done.stdout


def test_help_and_the_web_page_carry_no_requirement_codes() -> None:
    import re

    code = re.compile(r"\b[SCE][0-9]{1,2}\b")
    for command in COMMANDS:
        if command and command[0] in ("sessions", "runs"):
            continue  # the store commands are another module's
        out = lovia(*command, "--help").stdout
        assert not code.search(out), (command, code.findall(out))
    static = ROOT / "src" / "lovia" / "web" / "static"
    for name in ("index.html", "app.js", "render.js", "api.js"):
        assert not code.search((static / name).read_text()), name
    from lovia.web import create_app

    schema = json.dumps(create_app({}).openapi())
    assert not code.search(schema), code.findall(schema)


def test_web_on_a_database_it_cannot_use_is_two_lines_and_exit_2(tmp_path: Path) -> None:
    garbage = tmp_path / "notes.db"
    garbage.write_text("these are my notes, not a database\n" * 20)
    done = lovia("web", "--demo", "--db", str(garbage), "--port", str(_free_port()))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "startup failed" not in done.stderr
    assert done.stderr.startswith("lovia: error:") and "lovia: hint:" in done.stderr
    assert done.stdout == ""  # no URL for a server that does not serve
    assert garbage.read_text().startswith("these are my notes")
