"""A decision binds to what a person was shown (issue 27, part 1): the run and the call's
digest. The attack: a chat parks ``call_0`` with ``{"cents": 5}``; the call is rejected; the
conversation goes on and ``call_0`` waits again with ``{"cents": 500000}``; a decision taken
on what was shown first must be refused with nothing run, through ``lovia.approvals.decide``
and through the HTTP route of a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    UserError,
    approvals,
    tool,
)
from lovia.approvals import argument_digest
from lovia.testing import ScriptedProvider, call, text

from ..web_server import start_web, stop_web

LOVIA = Path(sys.executable).with_name("lovia")


async def test_a_decision_for_the_digest_shown_is_refused_once_the_call_changed(
    tmp_path: Path,
) -> None:
    """One run parks call_0 twice (providers number call ids from zero): the decision taken
    on the first digest cannot approve the second call."""
    charged: list[int] = []

    @tool(needs_approval=True)
    def charge(cents: int) -> str:
        """Charge the card."""
        charged.append(cents)
        return f"charged {cents}"

    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    first = Agent(
        "a",
        model=ScriptedProvider([call("charge", {"cents": 5}, call_id="call_0")]),
        tools=[charge],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(ApprovalPending):
        await Runner.run(first, "go", checkpoint=CheckpointOptions(cp, "r1"))
    [shown] = await approvals.pending_approvals(cp, "r1")
    assert shown.digest == argument_digest("charge", '{"cents": 5}')
    await approvals.decide(cp, "r1", {"call_0": False}, digests={"call_0": shown.digest})
    again = Agent(
        "a",
        model=ScriptedProvider([call("charge", {"cents": 500000}, call_id="call_0")]),
        tools=[charge],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(ApprovalPending):
        await Runner.run(again, [], checkpoint=CheckpointOptions(cp, "r1"))
    [now] = [p for p in await approvals.pending_approvals(cp, "r1") if p.decision is None]
    assert now.call_id == "call_0" and now.digest != shown.digest
    before = await cp.load("r1")
    with pytest.raises(UserError) as refused:
        await approvals.decide(cp, "r1", {"call_0": True}, digests={"call_0": shown.digest})
    assert getattr(refused.value, "code", None) == "approval_stale"
    assert "changed" in refused.value.message and now.digest[:12] in refused.value.message
    assert refused.value.hint
    assert await cp.load("r1") == before  # nothing written
    # the digest shown now decides it; the run goes on and the tool ran only with consent
    await approvals.decide(cp, "r1", {"call_0": False}, digests={"call_0": now.digest})
    done = Agent("a", model=ScriptedProvider([text("not charged")]), tools=[charge])
    result = await Runner.run(done, [], checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "not charged" and charged == []
    with pytest.raises(UserError, match="digests"):
        await approvals.decide(cp, "r1", {"call_0": True}, digests={"other": now.digest})
    await cp.close()


# -- through a real server ------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    ledger = tmp_path / "charged.txt"
    env = {**os.environ, "LOVIA_TEST_CHARGED": str(ledger)}
    command = [str(LOVIA), "web", "--app", "tests.web.apps:charging"]
    proc, base = start_web([*command, "--db", str(tmp_path / "lovia.db")], env=env, quiet=True)
    try:
        yield base, ledger
    finally:
        stop_web(proc)


def _park(base: str, chat: str, message: str) -> dict[str, Any]:
    """Send ``message``; read the stream until the run parks; the approval event's data."""
    shown: dict[str, Any] = {}
    body = {"message": message, "session_id": chat}
    with httpx.stream("POST", f"{base}/api/chat/stream", json=body, timeout=60) as sent:
        assert sent.status_code == 200
        kind = ""
        for line in sent.iter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
                if kind == "parked":
                    break
            elif line.startswith("data:") and kind == "approval_required":
                shown = json.loads(line[5:])
    assert shown, "no approval_required event"
    return shown


def _settled(base: str, chat: str) -> dict[str, Any]:
    for _ in range(600):
        now: dict[str, Any] = httpx.get(f"{base}/api/sessions/{chat}").json()
        if now["live"] is None:
            return now
        time.sleep(0.05)
    raise AssertionError("the chat is still answering")


def _approve(base: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{base}/api/chat/approve", json={"session_id": "c1", **body}, timeout=60)


def test_the_attack_through_a_real_server_is_refused_with_nothing_run(
    server: tuple[str, Path],
) -> None:
    base, ledger = server
    first = _park(base, "c1", "charge 5")
    assert first["id"] == "call_0" and first["run_id"]
    assert first["digest"] == argument_digest("charge", first["arguments"])
    listed = httpx.get(f"{base}/api/sessions/c1").json()["pending"]
    assert [a["digest"] for a in listed["approvals"]] == [first["digest"]]
    # another tab rejects it; the conversation goes on and parks call_0 again
    rejected = _approve(
        base, call_id="call_0", decision="deny", run_id=first["run_id"], digest=first["digest"]
    )
    assert rejected.status_code == 200, rejected.text
    _settled(base, "c1")
    second = _park(base, "c1", "charge 500000")
    assert second["id"] == "call_0" and second["digest"] != first["digest"]
    before = httpx.get(f"{base}/api/sessions/c1").json()["pending"]
    # the first tab presses Approve on what it showed: refused, nothing run, nothing written
    for run_id in (first["run_id"], second["run_id"]):
        stale = _approve(
            base, call_id="call_0", decision="approve", run_id=run_id, digest=first["digest"]
        )
        assert stale.status_code == 409, stale.text
        said = stale.json()["detail"]
        assert said["code"] == "approval_stale" and said["hint"], said
        assert "no longer waits" in said["message"] or "changed" in said["message"]
    assert not ledger.exists()
    assert httpx.get(f"{base}/api/sessions/c1").json()["pending"] == before
    # what is shown now can be decided
    ok = _approve(
        base, call_id="call_0", decision="approve", run_id=second["run_id"], digest=second["digest"]
    )
    assert ok.status_code == 200, ok.text
    _settled(base, "c1")
    assert ledger.read_text().split() == ["500000"]


def test_a_client_that_sends_only_the_call_id_is_served_when_one_call_waits(
    server: tuple[str, Path],
) -> None:
    base, ledger = server
    _park(base, "c1", "charge 7")
    answer = _approve(base, call_id="call_0", decision="approve")
    assert answer.status_code == 200, answer.text
    _settled(base, "c1")
    assert ledger.read_text().split() == ["7"]
    gone = _approve(base, call_id="call_0", decision="approve")
    assert gone.status_code == 404 and gone.json()["detail"]["code"] == "approval_not_found"


def test_the_cli_lists_the_digest_and_refuses_a_stale_one(tmp_path: Path) -> None:
    """``lovia runs approvals`` shows each call's digest; ``runs approve --digest`` with a
    digest that no longer matches exits 1 and decides nothing."""
    db = tmp_path / "runs.db"
    script = (
        "import asyncio, sys\n"
        "from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, tool\n"
        "from lovia.testing import ScriptedProvider, call\n"
        "@tool(needs_approval=True)\n"
        "def charge(cents: int) -> str:\n"
        "    return 'charged'\n"
        "async def main():\n"
        "    cp = SQLiteCheckpointer(sys.argv[1])\n"
        "    agent = Agent('a', model=ScriptedProvider([call('charge', {'cents': 500000},"
        " call_id='call_0')]), tools=[charge], approval_handler=lambda c, x: 'defer')\n"
        "    try:\n"
        "        await Runner.run(agent, 'go', checkpoint=CheckpointOptions(cp, 'r1'))\n"
        "    except Exception as exc:\n"
        "        print(type(exc).__name__)\n"
        "    await cp.close()\n"
        "asyncio.run(main())\n"
    )
    parked = subprocess.run(
        [sys.executable, "-c", script, str(db)], capture_output=True, text=True, timeout=120
    )
    assert "ApprovalPending" in parked.stdout, parked.stderr
    digest = argument_digest("charge", '{"cents": 500000}')
    listed = subprocess.run(
        [str(LOVIA), "runs", "approvals", "--db", str(db)], capture_output=True, text=True
    )
    assert digest in listed.stdout, listed
    old = argument_digest("charge", '{"cents": 5}')
    stale = subprocess.run(
        [str(LOVIA), "runs", "approve", "r1", "call_0", "--digest", old, "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert stale.returncode == 1, stale
    assert "changed" in stale.stderr and "lovia: hint:" in stale.stderr
    as_json = subprocess.run(
        [str(LOVIA), "runs", "approvals", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
    )
    [row] = json.loads(as_json.stdout)
    assert row["digest"] == digest  # still waiting: nothing was decided
    good = subprocess.run(
        [str(LOVIA), "runs", "approve", "r1", "call_0", "--digest", digest, "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert good.returncode == 0, good
