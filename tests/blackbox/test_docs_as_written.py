"""Shell and PostgreSQL examples of the docs, run as written (the Python blocks that run
offline are run by tests/docs; these are the ones it only compiles or cannot run).

Each command is taken from the page and run for real: the `lovia` console script in a
subprocess, `curl` against a real `lovia web`, PostgreSQL at ``LOVIA_TEST_POSTGRES_DSN``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..stores.pg import drop_prefix, postgres_dsn
from ..web_server import free_port

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LOVIA_", "OPENAI", "ANTHROPIC"))
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)
    return env


def _lovia() -> list[str]:
    return [sys.executable, "-c", "import sys; from lovia.cli import main; sys.exit(main())"]


def _block(page: str, start: str) -> str:
    """The fenced block of ``docs/<page>`` whose first line starts with ``start``."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    for body in re.findall(r"^```\w*\n(.*?)^```", text, flags=re.S | re.M):
        if body.startswith(start):
            return str(body)
    raise AssertionError(f"no block starting with {start!r} in docs/{page}")


def _commands(block: str) -> list[list[str]]:
    """The block's command lines, comments dropped, continuation lines joined."""
    joined = block.replace("\\\n", " ")
    lines = [re.sub(r"\s#.*$", "", line).strip() for line in joined.splitlines()]
    return [shlex.split(line) for line in lines if line and not line.startswith("#")]


def test_the_curl_example_streams_the_demo_answer_from_a_real_server(tmp_path: Path) -> None:
    """web.md: `lovia web --demo`, then the curl command as printed, on the port the
    server said; the stream names its chat first, ends with one `done`, and the chat is stored."""
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    start = _commands(_block("web.md", "pip install -e '.[web]'"))
    assert start[1] == ["lovia", "web", "--demo"]
    port = free_port()
    server = subprocess.Popen(
        [*_lovia(), *start[1][1:], "--port", str(port)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.strip() == f"lovia web: open http://127.0.0.1:{port}/", line
        curl = _commands(_block("web.md", "curl -N -X POST"))[0]
        curl = [a.replace(":8000/", f":{port}/") for a in curl]
        done = subprocess.run([*curl, "-sS", "--max-time", "60"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        events = re.findall(r"^event: (\S+)$", done.stdout, flags=re.M)
        assert events[0] == "session", done.stdout
        assert events[-1] == "done" and events.count("done") == 1, done.stdout
        assert "error" not in events
        first = re.search(r"^data: (.*)$", done.stdout, flags=re.M)
        assert first is not None
        session_id = json.loads(first.group(1))["session_id"]
        # every later event carries "<run>:<seq>"; the seq never goes back
        seqs = [int(i) for i in re.findall(r"^id: \w+:(\d+)$", done.stdout, flags=re.M)]
        assert len(seqs) == len(events) - 1 and seqs == sorted(seqs)
        assert "42" in done.stdout
    finally:
        server.terminate()
        server.communicate(timeout=20)
    # the chat the curl call wrote is in the default database of that folder
    shown = subprocess.run(
        [*_lovia(), "sessions", "show", session_id, "--json"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    entries = json.loads(shown.stdout)
    text = json.dumps(entries)
    assert "calculate 6 * 7" in text and "42" in text


APP = '''
import json
from pathlib import Path

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text

LEDGER = Path(__file__).resolve().parent.parent / "ledger.json"


@tool(needs_approval=True)
def send_payment(to: str, cents: int) -> str:
    """Pay a supplier."""
    paid = json.loads(LEDGER.read_text()) if LEDGER.exists() else []
    paid.append([to, cents])
    LEDGER.write_text(json.dumps(paid))
    return f"paid {cents} cents to {to}"


def _model(messages):
    if len(messages) <= 2:
        return call("send_payment", {"to": "ACME", "cents": 125000}, call_id="pay_1")
    return text("Paid.")


payer = Agent(
    "payer",
    model=ScriptedProvider([_model, _model]),
    tools=[send_payment],
    approval_handler=lambda c, ctx: "defer",
)
'''

PARK = """
import asyncio
from lovia import ApprovalPending, CheckpointOptions, Runner, SQLiteCheckpointer
from myapp.agents import payer

async def main():
    async with SQLiteCheckpointer("app.db", wal=True) as cp:
        try:
            await Runner.run(payer, "Pay ACME.", checkpoint=CheckpointOptions(cp, "pay-1"))
        except ApprovalPending:
            print("parked")

asyncio.run(main())
"""


def test_the_approvals_shell_example_records_a_decision_and_pays_once(tmp_path: Path) -> None:
    """approvals.md: list, approve (twice: the second is already recorded), resume with
    --app; reject of a decided call is a conflict (1), an unknown call is 2."""
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "agents.py").write_text(textwrap.dedent(APP))
    (tmp_path / "park.py").write_text(textwrap.dedent(PARK))
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join((str(tmp_path), env["PYTHONPATH"]))
    parked = subprocess.run(
        [sys.executable, "park.py"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert parked.stdout.strip() == "parked", parked.stderr

    def lovia(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        assert cmd[0] == "lovia"
        args = [a.replace("RUN_ID", "pay-1").replace("CALL_ID", "pay_1") for a in cmd[1:]]
        args = [a for a in args if a != "[pay-1]"]
        return subprocess.run(
            [*_lovia(), *args], cwd=tmp_path, env=env, capture_output=True, text=True
        )

    listing, approve, reject, resume = _commands(_block("approvals.md", "lovia runs approvals"))
    shown = lovia(listing)
    assert shown.returncode == 0, shown.stderr
    assert "pay_1" in shown.stdout and "send_payment" in shown.stdout
    assert not (tmp_path / "ledger.json").exists()
    first = lovia(approve)
    assert first.returncode == 0, first.stderr
    again = lovia(approve)
    assert again.returncode == 0, again.stderr
    conflicting = lovia(reject)
    assert conflicting.returncode == 1, (conflicting.stdout, conflicting.stderr)
    unknown = lovia([a.replace("CALL_ID", "no_such_call") for a in approve])
    assert unknown.returncode == 2 and unknown.stderr.strip(), unknown
    finished = lovia(resume)
    assert finished.returncode == 0, finished.stderr
    assert "Paid." in finished.stdout
    assert json.loads((tmp_path / "ledger.json").read_text()) == [["ACME", 125000]]
    # resuming a completed run again replays it: the payment is not made twice
    replay = lovia(resume)
    assert json.loads((tmp_path / "ledger.json").read_text()) == [["ACME", 125000]]
    assert replay.returncode in (0, 2), replay


def test_the_postgres_block_of_deployment_runs_against_a_real_server(tmp_path: Path) -> None:
    """deployment.md's block, with its DSN pointed at the test database, then used the way
    the page says: both stores in one database, a run that lands in both."""
    dsn = postgres_dsn()
    block = _block("deployment.md", "# needs: PostgreSQL\nfrom lovia import PostgresCheckpointer")
    assert 'dsn = "postgresql://app@db.internal:5432/app"' in block
    prefix = f"docs{os.getpid()}_"
    program = block.replace('"postgresql://app@db.internal:5432/app"', repr(dsn))
    program = program.replace(
        "PostgresSession(dsn)", f"PostgresSession(dsn, table_prefix={prefix!r})"
    )
    program = program.replace(
        "PostgresCheckpointer(dsn)", f"PostgresCheckpointer(dsn, table_prefix={prefix!r})"
    )
    program = (
        "import asyncio\n\nasync def main():\n"
        + textwrap.indent(program, "    ")
        + textwrap.indent(
            textwrap.dedent(
                """
            from lovia import Agent, CheckpointOptions, Runner
            from lovia.testing import ScriptedProvider, text
            agent = Agent("a", model=ScriptedProvider([text("stored")]))
            r = await Runner.run(agent, "hi", session=session, session_id="u1",
                                 checkpoint=CheckpointOptions(checkpointer, "job-1"))
            snap = await checkpointer.load("job-1")
            print(r.output, snap.status, [s.run_id for s in await session.segments("u1")])
            await session.close()
            await checkpointer.close()
            """
            ),
            "    ",
        )
        + "\nasyncio.run(main())\n"
    )
    (tmp_path / "pg_example.py").write_text(program)
    try:
        done = subprocess.run(
            [sys.executable, "-W", "error", "pg_example.py"],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["stored", "completed", "['job-1']"]
    finally:
        drop_prefix(dsn, prefix)
