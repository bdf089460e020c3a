"""Two real server processes on one database, racing on one chat (issue 14, items 1 and 3).

Each request either wins (200, its answer lands whole) or is refused with 409 before it has
written anything; the chat never loses an exchange, never keeps a message without its
answer, and never ends with a run that vanished. Real ``lovia web`` processes on one SQLite
file, and on PostgreSQL (their tables in a schema of the test's own).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql

from ..stores.pg import fresh_prefix, postgres_dsn
from ..web_server import start_web, stop_web
from .conftest import chat_path, message, user_ref

LOVIA = Path(sys.executable).with_name("lovia")
TRIALS = 6


@pytest.fixture(params=["sqlite", "postgres"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        db = str(tmp_path / "shared.db")
        command = [str(LOVIA), "web", "--app", "tests.web.apps:slow", "--db", db]
        commands = [command, command]
        cleanup = None
    else:  # lovia web on PostgreSQL, its tables in a schema of this test's own
        dsn = postgres_dsn()
        schema = fresh_prefix().rstrip("_")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        url = f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"
        command = [str(LOVIA), "web", "--app", "tests.web.apps:slow", "--db", url]
        commands = [command, command]
        cleanup = (dsn, schema)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        bases = []
        for c in commands:
            proc, base = start_web(c)
            procs.append(proc)
            bases.append(base)
        yield bases[0], bases[1]
    finally:
        for proc in procs:
            proc.terminate()  # all at once, then wait for each
        for proc in procs:
            stop_web(proc)
        if cleanup is not None:
            with psycopg.connect(cleanup[0], autocommit=True) as conn:
                drop = sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(cleanup[1]))
                conn.execute(drop)


async def _post(client: httpx.AsyncClient, url: str, body: Any) -> tuple[int, str]:
    response = await client.post(url, json=body, timeout=30)
    return response.status_code, response.text


def _exchanges(chat: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """``[(user text, [answer texts])]`` of a chat's stored messages."""
    out: list[tuple[str, list[str]]] = []
    for m in chat["entries"]:
        if m["role"] == "user":
            out.append((m["content"], []))
        elif m["role"] == "assistant" and m["content"]:
            assert out, chat
            out[-1][1].append(m["content"])
    return out


def _answered(chat: dict[str, Any]) -> list[str]:
    """The user messages of the chat, after checking that each has exactly its own answer."""
    exchanges = _exchanges(chat)
    for question, answers in exchanges:
        assert answers == [f"echo: {question}"], chat
    assert chat["pending"] is None, chat
    return [q for q, _ in exchanges]


async def _chat(client: httpx.AsyncClient, base: str, chat_id: str) -> dict[str, Any]:
    response = await client.get(f"{base}{chat_path(chat_id)}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def _setup(client: httpx.AsyncClient, base: str, chat_id: str) -> None:
    for q in ("q1", "q2"):
        status, text = await _post(client, f"{base}/api/chat/stream", message(chat_id, q))
        assert status == 200 and "event: done" in text, text


async def _again(
    client: httpx.AsyncClient, base: str, chat_id: str, ref: str, text: str
) -> tuple[int, str]:
    """Rewind to the user message ``ref`` names, then send ``text`` there (edit and
    regenerate): the rewind's refusal, or the message's answer."""
    status, body = await _post(client, f"{base}{chat_path(chat_id, '/rewind')}", {"ref": ref})
    if status != 200:
        return status, body
    return await _post(client, f"{base}/api/chat/stream", message(chat_id, text))


async def test_regenerate_on_two_servers_at_once_loses_no_exchange(
    servers: tuple[str, str],
) -> None:
    one, two = servers
    refused = 0
    async with httpx.AsyncClient() as client:
        for trial in range(TRIALS):
            chat_id = f"regen{trial}"
            await _setup(client, one, chat_id)
            ref = user_ref(await _chat(client, one, chat_id))
            results = await asyncio.gather(
                _again(client, one, chat_id, ref, "q2"), _again(client, two, chat_id, ref, "q2")
            )
            codes = sorted(status for status, _ in results)
            # the rewind that came second found its message gone (404) or the chat held (409)
            assert codes in ([200, 404], [200, 409]), results
            refused += codes.count(409)
            for status, text in results:
                if status == 200:
                    assert "event: done" in text, text
                elif status == 409:
                    assert "busy" in text or "run_active" in text, text
            for base in (one, two):
                assert _answered(await _chat(client, base, chat_id)) == ["q1", "q2"]
    assert refused > 0  # the requests did overlap


async def test_edit_on_two_servers_at_once_rewinds_once(servers: tuple[str, str]) -> None:
    one, two = servers
    refused = 0
    async with httpx.AsyncClient() as client:
        for trial in range(TRIALS):
            chat_id = f"edit{trial}"
            await _setup(client, one, chat_id)
            ref = user_ref(await _chat(client, one, chat_id))
            results = await asyncio.gather(
                _again(client, one, chat_id, ref, "e1"), _again(client, two, chat_id, ref, "e2")
            )
            codes = [status for status, _ in results]
            # the other server's rewind found its message gone (404) or the chat held (409);
            # or a rewind went through and its message then found the chat held a moment by
            # the other server's refused rewind (409, the text goes back to the composer)
            assert sorted(codes) in ([200, 404], [200, 409], [404, 409]), results
            refused += codes.count(409)
            if 200 not in codes:
                assert _answered(await _chat(client, two, chat_id)) == ["q1"]
                continue
            questions = _answered(await _chat(client, two, chat_id))
            assert questions[0] == "q1" and len(questions) == 2, questions
            if codes.count(200) == 1:
                assert questions[1] == ("e1" if codes[0] == 200 else "e2")
    assert refused > 0


async def test_two_messages_on_two_servers_at_once_are_both_kept_or_refused(
    servers: tuple[str, str],
) -> None:
    """A message answered 200 is in the chat with its answer; one refused with 409 is not
    in it at all (the page keeps it in the composer); nothing else is stored."""
    one, two = servers
    refused = 0
    async with httpx.AsyncClient() as client:
        for trial in range(TRIALS):
            chat_id = f"send{trial}"
            results = await asyncio.gather(
                _post(client, f"{one}/api/chat/stream", message(chat_id, "from one")),
                _post(client, f"{two}/api/chat/stream", message(chat_id, "from two")),
            )
            sent = zip(["from one", "from two"], results, strict=True)
            kept = [m for m, (status, _) in sent if status == 200]
            codes = sorted(status for status, _ in results)
            assert codes in ([200, 200], [200, 409]), results
            refused += codes.count(409)
            for status, text in results:
                if status == 200:
                    assert "event: done" in text and "SessionConflict" not in text, text
            questions = _answered(await _chat(client, one, chat_id))
            assert sorted(questions) == sorted(kept)
            resumable = (await client.get(f"{one}/api/runs/resumable")).json()
            assert resumable == []
    assert refused > 0


async def test_a_delete_racing_a_send_on_two_servers_keeps_or_refuses_the_message(
    servers: tuple[str, str],
) -> None:
    """Issue 14 finding 15: a chat deleted on one server while a message is sent to it on
    the other. A send answered 200 whose delete was refused is in the chat with its answer;
    a delete answered 200 left nothing of the old chat (at most the message sent after it,
    whole); no run is left unfinished."""
    one, two = servers
    outcomes: set[tuple[int, int]] = set()
    async with httpx.AsyncClient() as client:
        for trial in range(TRIALS):
            chat_id = f"delete{trial}"
            status, text = await _post(client, f"{one}/api/chat/stream", message(chat_id, "q1"))
            assert status == 200 and "event: done" in text, text

            async def delete(pause: float, chat_id: str = chat_id) -> tuple[int, str]:
                await asyncio.sleep(pause)
                response = await client.delete(f"{two}{chat_path(chat_id)}", timeout=30)
                return response.status_code, response.text

            (sent, text), (deleted, reason) = await asyncio.gather(
                _post(client, f"{one}/api/chat/stream", message(chat_id, "keep me")),
                delete(0.05 * (trial % 3)),
            )
            outcomes.add((sent, deleted))
            assert sent in (200, 409) and deleted in (200, 409), (text, reason)
            if sent == 200:
                assert "event: done" in text, text
            response = await client.get(f"{one}{chat_path(chat_id)}")
            questions = _answered(response.json()) if response.status_code == 200 else []
            if deleted == 200:
                assert "q1" not in questions and questions in ([], ["keep me"]), questions
            else:
                assert "busy" in reason, reason
                assert questions == (["q1", "keep me"] if sent == 200 else ["q1"]), questions
            resumable = (await client.get(f"{one}/api/runs/resumable")).json()
            assert [r for r in resumable if r["session_id"] == chat_id] == []
    assert (200, 409) in outcomes  # the requests did overlap
