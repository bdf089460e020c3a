"""Partial requests time out when serving (issue 14, item 13): a client that opens a
connection and sends nothing, half a request line, or its headers a byte at a time gets 408
and its connection is closed, on ``lovia web`` itself; a complete request is served."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lovia.web.serving import header_timeout_protocol

from ..web_server import start_web as _start
from ..web_server import stop_web as _stop

LOVIA = Path(sys.executable).with_name("lovia")


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    db = str(tmp_path_factory.mktemp("serving") / "lovia.db")
    command = [str(LOVIA), "web", "--demo", "--db", db, "--request-timeout", "1"]
    proc, base = _start(command)
    try:
        yield int(base.rsplit(":", 1)[1])
    finally:
        _stop(proc)


def _answer(conn: socket.socket) -> str:
    """Everything the server sends until it closes the connection (20 s at most)."""
    chunks = []
    while chunk := conn.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_a_connection_that_sends_nothing_is_closed_with_408(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        answer = _answer(conn)
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "headers did not arrive" in answer


def test_half_a_request_head_is_closed_with_408(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answer = _answer(conn)
    assert answer.startswith("HTTP/1.1 408"), answer


def test_headers_trickled_a_byte_at_a_time_do_not_hold_the_connection(port: int) -> None:
    head = b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: " + b"a" * 200
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        sent = 0
        try:
            for byte in head:
                conn.sendall(bytes([byte]))
                sent += 1
                time.sleep(0.05)  # the pace of a slow-headers attack, not a measurement
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed on us mid-trickle: what the test wants
        answer = _answer(conn)
    assert sent < len(head), "the server waited for the whole trickle"
    assert answer.startswith("HTTP/1.1 408") or answer == "", answer


def test_a_complete_request_is_served_and_the_next_one_has_its_own_deadline(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = conn.recv(65536).decode()  # at least the start of the first answer
        assert first.startswith("HTTP/1.1 200"), first
        conn.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        answer = first + _answer(conn)
    assert answer.count("HTTP/1.1 200") == 1 and '"configured":true' in answer, answer
    second = answer[answer.index("HTTP/1.1", 1) :]
    assert second.startswith("HTTP/1.1 408"), answer


def test_a_slow_body_gets_408_under_the_same_option(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(
            b"POST /api/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            b'{"message":'
        )
        answer = _answer(conn)
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "body did not arrive" in answer


def test_the_deadline_must_be_positive() -> None:
    with pytest.raises(ValueError):
        header_timeout_protocol(0)
