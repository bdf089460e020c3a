"""``lovia web --workers``: a run a ``lovia worker`` process drives streams its tokens to the
page through the web server as they come (``text_delta`` events before the whole message),
as a run in the web server does, and the deltas add up to the saved answer. Issue 34."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

pytest.importorskip("procrastinate")
pytest.importorskip("lovia.web")

from .test_web_workers import APP, Procs, _events, _serve, _wait_up
from .test_web_workers import procs as procs  # the fixture
from .web_queue_app import TALK


def test_a_workers_run_streams_its_tokens_to_the_page_before_the_message(procs: Procs) -> None:
    _, port = _serve(procs, f"{APP}:talker")
    procs.spawn("worker-1", "worker", "--app", f"{APP}:talking", "--db", procs.dsn)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        _wait_up(client, procs)
        chat = uuid.uuid4().hex
        seen: list[tuple[str, Any]] = []
        body = {"message": "talk", "session_id": chat}
        with client.stream("POST", "/api/chat/stream", json=body) as response:
            assert response.status_code == 200, procs.logs()
            for name, data in _events(response.iter_lines()):
                seen.append((name, data))
                if name in ("done", "error"):
                    break
    names = [n for n, _ in seen]
    assert names[-1] == "done", (seen, procs.logs())
    before = names[: names.index("message_completed")]
    assert before.count("text_delta") >= 3, seen  # tokens as they came, not the whole turn
    assert "".join(d["delta"] for n, d in seen if n == "text_delta") == TALK
    assert "output_discarded" not in names
    assert seen[-1][1]["output"] == TALK
